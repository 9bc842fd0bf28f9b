"""`tool_calling: auto` in front of servers that accept `tools` and drop them (llama.cpp without
--jinja, Ollama models without a tools template) or show them to the model (vLLM, Ollama with
one), through the real server and the official SDK: a model found dropping them is emulated
from its first request and its tools run; one found keeping them, or without a sign, or whose
look fails, stays native; each model is looked at once, even under concurrent requests."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from testing.template_servers import Native, TemplateServer
from testing.upstream import FakeUpstream, Reply
from tests.conftest import Proxy, serve_proxy
from tests.e2e.answers import ask
from tests.e2e.tools import registry_with

MODEL = "local-model"
USER = [{"role": "user", "content": "What is the weather in Paris?"}]
LOGGER = "toolwire.emulation"


def hermes(name: str, arguments: dict[str, Any]) -> str:
    """A call as the model writes it when the tools are in its prompt (Hermes, the default)."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


@contextlib.asynccontextmanager
async def proxy_for(base_url: str, **state: Any) -> AsyncIterator[Proxy]:
    upstream = {"name": "local", "base_url": base_url, "tool_calling": "auto"}
    config: dict[str, Any] = {"upstreams": [upstream], **({"state": state} if state else {})}
    async with serve_proxy(config, registry_with()) as proxy:
        yield proxy


def lines(caplog: pytest.LogCaptureFixture, words: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and words in r.getMessage()]


DROPPING = {
    "llama.cpp-no-jinja": (
        lambda: TemplateServer("llama.cpp", shows_tools=False),
        "llama.cpp renders the same prompt with and without them",
    ),
    "ollama-no-tools-template": (
        lambda: TemplateServer("ollama", shows_tools=False),
        "Ollama's /api/show lists no 'tools' capability (completion)",
    ),
    "ollama-old-no-tools-template": (
        lambda: TemplateServer("ollama", shows_tools=False, capabilities=False),
        "its Ollama template (/api/show) has no tools section",
    ),
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("server", list(DROPPING))
async def test_a_model_whose_tools_are_dropped_is_emulated_and_its_tool_runs(
    caplog: pytest.LogCaptureFixture, server: str, stream: bool
) -> None:
    make, why = DROPPING[server]
    caplog.set_level(logging.INFO, logger=LOGGER)
    async with make() as fake, proxy_for(fake.base_url) as proxy:
        fake.script(
            "Let me look.\n" + hermes("t_get_weather", {"city": "Paris"}),
            "It is sunny in Paris.",
            "Still sunny.",
        )
        first = await ask(proxy.client, stream=stream, model=MODEL, messages=USER)
        looked = dict(fake.hits)
        again = await ask(proxy.client, stream=stream, model=MODEL, messages=USER)
    assert first.content == "Let me look.\nIt is sunny in Paris."
    assert first.finish_reason == "stop" and not first.tool_calls
    assert again.content == "Still sunny."
    # Every request went out emulated, the first one included: tools in the prompt, not sent.
    assert [("tools" in body) for body in fake.requests] == [False, False, False]
    assert '"name": "t_get_weather"' in fake.requests[0]["messages"][0]["content"]
    result = fake.requests[1]["messages"][-1]["content"]
    assert result.startswith("<tool_response>\n") and '"conditions":"sunny"' in result
    # Looked at once: the second request asked the server nothing more.
    assert dict(fake.hits) | {"/v1/chat/completions": 0} == looked | {"/v1/chat/completions": 0}
    assert lines(caplog, "drops tools") == [
        f"upstream 'local' drops tools for model '{MODEL}' ({why}); emulating from now on"
    ]


KEEPING = {
    "vllm": (
        lambda: TemplateServer("vllm", shows_tools=True),
        "counts",
    ),
    "ollama-tools-template": (
        lambda: TemplateServer("ollama", shows_tools=True),
        "Ollama's /api/show lists the 'tools' capability",
    ),
    "llama.cpp-jinja": (
        lambda: TemplateServer("llama.cpp", shows_tools=True),
        "llama.cpp's /props: the chat template supports tools",
    ),
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("server", list(KEEPING))
async def test_a_model_that_sees_its_tools_stays_native(
    caplog: pytest.LogCaptureFixture, server: str, stream: bool
) -> None:
    make, why = KEEPING[server]
    caplog.set_level(logging.INFO, logger=LOGGER)
    async with make() as fake, proxy_for(fake.base_url) as proxy:
        fake.script(Native("t_get_weather", {"city": "Paris"}), "It is sunny in Paris.")
        out = await ask(proxy.client, stream=stream, model=MODEL, messages=USER)
    assert out.content == "It is sunny in Paris."
    assert [("tools" in body) for body in fake.requests] == [True, True]
    sent = fake.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert json.loads(sent[2]["content"])["conditions"] == "sunny"
    (kept,) = lines(caplog, "keeps tools")
    assert kept.startswith(f"upstream 'local' keeps tools for model '{MODEL}' (") and why in kept
    if server == "vllm":
        # The sign was the prompt's size: one-token requests with and without the tools.
        assert [("tools" in body) for body in fake.probes] == [True, False]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_server_that_shows_no_sign_stays_native(
    caplog: pytest.LogCaptureFixture, stream: bool
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    async with FakeUpstream(Reply.text("Sunny.")) as fake, proxy_for(fake.base_url) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "Sunny."
    # No completion of its own was sent to a server none of the signs recognise.
    assert [("tools" in body) for body in fake.requests] == [True]
    (line,) = lines(caplog, "no sign")
    assert "calling it natively" in line


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_failed_look_stays_native_and_is_logged(
    caplog: pytest.LogCaptureFixture, stream: bool
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    server = TemplateServer("ollama", shows_tools=False, failing="/api/show")
    async with server as fake, proxy_for(fake.base_url) as proxy:
        fake.script("No tools here.", "Still none.")
        first = await ask(proxy.client, stream=stream, model=MODEL, messages=USER)
        second = await ask(proxy.client, stream=stream, model=MODEL, messages=USER)
    assert (first.content, second.content) == ("No tools here.", "Still none.")
    assert [("tools" in body) for body in fake.requests] == [True, True]
    assert fake.hits["/api/show"] == 1  # a failed look is not repeated
    (line,) = lines(caplog, "could not tell")
    assert line.startswith(f"upstream 'local': could not tell whether model '{MODEL}' drops")
    assert "500" in line and line.endswith("calling it natively")
    assert lines(caplog, "emulating") == []


async def test_a_server_that_refuses_tools_is_left_to_its_refusal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    refusal = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser'
    server = TemplateServer("vllm", shows_tools=False, refuses_tools=refusal)
    async with server as fake, proxy_for(fake.base_url) as proxy:
        fake.script("Hello.", "Hello again.")
        first = await ask(proxy.client, stream=False, model=MODEL, messages=USER)
        second = await ask(proxy.client, stream=True, model=MODEL, messages=USER)
    assert (first.content, second.content) == ("Hello.", "Hello again.")
    # The look's one-token request and the first request were refused; then emulation.
    assert [body.get("max_tokens") for body in fake.refused] == [1, None]
    assert [("tools" in body) for body in fake.requests] == [False, False]
    (no_sign,) = lines(caplog, "no sign")
    assert 'vLLM 0.33.0 refuses them: "auto" tool choice requires' in no_sign
    (rejected,) = lines(caplog, "rejected tools")
    assert "emulating from now on" in rejected


async def test_concurrent_first_requests_look_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    async with TemplateServer("llama.cpp", shows_tools=False) as fake:
        fake.hold = asyncio.Event()
        fake.script("Hello.")
        async with proxy_for(fake.base_url) as proxy:
            asked = [
                asyncio.create_task(
                    ask(proxy.client, stream=i % 2 == 1, model=MODEL, messages=USER)
                )
                for i in range(8)
            ]
            async with asyncio.timeout(10):
                await fake.holding.wait()
            # Give the other requests time to reach the proxy while the first look is held.
            for _ in range(200):
                await asyncio.sleep(0)
            fake.hold.set()
            answers = await asyncio.gather(*asked)
    assert [a.content for a in answers] == ["Hello."] * 8
    assert fake.hits["/props"] == 1 and fake.hits["/apply-template"] == 2
    assert [("tools" in body) for body in fake.requests] == [False] * 8
    assert len(lines(caplog, "drops tools")) == 1
