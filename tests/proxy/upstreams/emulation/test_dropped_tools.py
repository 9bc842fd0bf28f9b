"""Finding a server that accepts `tools` and drops them: the signs each server shows, and the
look itself (once per model, one at a time, within its deadline, native when it fails)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import pytest

from proxy import parse_settings
from proxy.errors import UpstreamError
from proxy.upstreams.demo import DemoUpstream
from proxy.upstreams.emulation import with_tool_calling
from proxy.upstreams.emulation.dropped_tools import DroppedTools, Finding, ServerProbe, probe_for
from testing.template_servers import TemplateServer
from testing.upstream import FakeUpstream, Reply
from tests.conftest import REPO

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
]


def config(base_url: str, **fields: Any) -> Any:
    upstream = {"name": "local", "base_url": base_url, "tool_calling": "auto", **fields}
    return parse_settings({"upstreams": [upstream]}, base_dir=REPO, environ={}).upstreams[0]


async def look(base_url: str) -> Finding:
    probe = ServerProbe(config(base_url))
    try:
        return await probe.look("local-model", TOOLS, None)
    finally:
        await probe.aclose()


@pytest.mark.parametrize(
    ("server", "drops", "why"),
    [
        (TemplateServer("llama.cpp", shows_tools=False), True, "same prompt with and without"),
        (TemplateServer("llama.cpp", shows_tools=True), False, "template supports tools"),
        (TemplateServer("ollama", shows_tools=False), True, "no 'tools' capability"),
        (TemplateServer("ollama", shows_tools=True), False, "lists the 'tools' capability"),
        (
            TemplateServer("ollama", shows_tools=False, capabilities=False),
            True,
            "template (/api/show) has no tools section",
        ),
        (TemplateServer("vllm", shows_tools=False), True, "with and without them"),
        (TemplateServer("vllm", shows_tools=True), False, "prompt tokens with them"),
        (TemplateServer("sglang", shows_tools=False), True, "SGLang counts"),
        (TemplateServer("sglang", shows_tools=True), False, "SGLang counts"),
        (
            TemplateServer("llama.cpp", shows_tools=True, capabilities=False),
            False,
            "renders them into the prompt (/apply-template)",
        ),
    ],
    ids=[
        "llama.cpp-no-jinja",
        "llama.cpp-jinja",
        "ollama-plain",
        "ollama-tools",
        "ollama-old-plain",
        "vllm-plain",
        "vllm-tools",
        "sglang-plain",
        "sglang-tools",
        "llama.cpp-jinja-before-caps",
    ],
)
async def test_each_server_shows_whether_it_drops_tools(
    server: TemplateServer, drops: bool, why: str
) -> None:
    async with server:
        finding = await look(server.base_url)
    assert finding.drops is drops
    assert why in finding.why
    assert server.requests == []  # no scripted turn was taken
    if server.kind in ("vllm", "sglang"):
        assert [bool(p.get("tools")) for p in server.probes] == [True, False]
        assert all(p["max_tokens"] == 1 and p["stream"] is False for p in server.probes)
    else:
        assert server.probes == []  # the metadata answered: no completion was needed


async def test_an_unknown_server_gives_no_sign_and_no_completion() -> None:
    async with FakeUpstream(Reply.text("should not be asked")) as fake:
        finding = await look(fake.base_url)
    assert finding.drops is None
    assert fake.requests == []


async def test_a_failing_endpoint_fails_the_look() -> None:
    async with TemplateServer("ollama", shows_tools=False, failing="/api/show") as server:
        with pytest.raises(UpstreamError, match="500"):
            await look(server.base_url)


def test_only_auto_chat_upstreams_are_probed() -> None:
    assert probe_for(config("http://h/v1")) is not None
    assert probe_for(config("http://h/v1", tool_calling="native")) is None
    per_model = config("http://h/v1", tool_calling="native", models_tool_calling={"q*": "auto"})
    assert probe_for(per_model) is not None
    assert probe_for(config("http://h", format="anthropic")) is None


class Gated:
    """A probe whose looks wait for `gate`, counting them."""

    def __init__(self, finding: Finding | Exception | None = None) -> None:
        self.finding = finding if finding is not None else Finding(True, "gated")
        self.gate = asyncio.Event()
        self.looks = 0
        self.closed = False

    async def look(
        self, model: str, tools: list[Any], headers: Mapping[str, str] | None
    ) -> Finding:
        self.looks += 1
        await self.gate.wait()
        if isinstance(self.finding, Exception):
            raise self.finding
        return self.finding

    async def aclose(self) -> None:
        self.closed = True


async def test_one_look_per_model_under_concurrency(caplog: pytest.LogCaptureFixture) -> None:
    probe = Gated()
    dropped = DroppedTools("local", probe)
    with caplog.at_level(logging.INFO, logger="toolwire.emulation"):
        waiting = [asyncio.create_task(dropped.drops("m", TOOLS)) for _ in range(8)]
        await asyncio.sleep(0)  # every caller is at the look or waiting for it
        assert probe.looks == 1
        probe.gate.set()
        assert await asyncio.gather(*waiting) == [True] * 8
        assert await dropped.drops("m", TOOLS) is True
    assert probe.looks == 1
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["upstream 'local' drops tools for model 'm' (gated); emulating from now on"]


async def test_each_model_is_looked_at_on_its_own() -> None:
    probe = Gated()
    probe.gate.set()
    dropped = DroppedTools("local", probe)
    assert [await dropped.drops(m, TOOLS) for m in ("a", "b", "a")] == [True, True, True]
    assert probe.looks == 2


async def test_a_look_past_its_deadline_leaves_the_model_native(
    caplog: pytest.LogCaptureFixture,
) -> None:
    probe = Gated()  # never opened
    dropped = DroppedTools("local", probe, timeout_s=0.05)
    with caplog.at_level(logging.WARNING, logger="toolwire.emulation"):
        assert await dropped.drops("m", TOOLS) is False
        assert await dropped.drops("m", TOOLS) is False
    assert probe.looks == 1
    (line,) = [r.getMessage() for r in caplog.records]
    assert "no sign whether model 'm' drops tools within 0.05 s; calling it natively" in line


async def test_a_failed_look_leaves_the_model_native(caplog: pytest.LogCaptureFixture) -> None:
    probe = Gated(UpstreamError("upstream 'local' is unreachable: connection refused"))
    probe.gate.set()
    dropped = DroppedTools("local", probe)
    with caplog.at_level(logging.WARNING, logger="toolwire.emulation"):
        assert await dropped.drops("m", TOOLS) is False
    (line,) = [r.getMessage() for r in caplog.records]
    assert "could not tell whether model 'm' drops tools" in line
    assert "connection refused" in line and line.endswith("calling it natively")


async def test_no_sign_leaves_the_model_native(caplog: pytest.LogCaptureFixture) -> None:
    probe = Gated(Finding(None, "not a server that renders templates"))
    probe.gate.set()
    with caplog.at_level(logging.INFO, logger="toolwire.emulation"):
        assert await DroppedTools("local", probe).drops("m", TOOLS) is False
    assert "no sign whether model 'm' drops tools" in caplog.records[0].getMessage()


async def test_a_look_cancelled_with_its_request_is_taken_up_by_the_next() -> None:
    probe = Gated()
    dropped = DroppedTools("local", probe)
    first = asyncio.create_task(dropped.drops("m", TOOLS))
    await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    probe.gate.set()
    assert await dropped.drops("m", TOOLS) is True
    assert probe.looks == 2


@pytest.mark.parametrize("default", ["auto", "native"])
async def test_the_probe_is_closed_with_its_upstream(default: str) -> None:
    probe = Gated()
    per_model = {"q*": "auto", "l*": "emulated"}
    upstream = with_tool_calling(DemoUpstream("demo"), default, per_model=per_model, probe=probe)
    await upstream.aclose()
    assert probe.closed
