"""Long tool results spilled, not cut, through the real server: a real MCP server (written
with the SDK) returns a 5 MB report, the model gets its preview and handle, reads it back
with `read_result` in ranges and by pattern, byte for byte; results of Python and OpenAPI
tools spill the same way; another key's read finds nothing; the client's stream marks the
spilled result on each front; a program in code mode gets the whole result.

One proxy for the module (keys `a` and `b`), in front of a scripted model.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio

from proxy.turn.spill import MARK
from registry import ToolRegistry
from registry.output import truncate
from testing.mcp_results import report_text, serve_results
from testing.openapi_service import create_shop
from testing.openapi_service import serve_app as serve_shop
from testing.upstream import FakeUpstream, Reply
from tests.conftest import serve_proxy
from tests.e2e.answers import ask
from tests.e2e.responses_client import respond
from tests.e2e.tenants import AUTH, Tenants, answered, tenants_of, user

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = "fake-model"
KILOBYTES = 5 * 1024
REPORT = report_text(KILOBYTES).encode()
OFFSET, LENGTH = 3_000_001, 4000  # an odd offset: somewhere inside a line
SMALL, SMALL_OFFSET = 200, 100_001  # KiB, and where its range is read
ROW = 123_450  # a row with an é (a multiple of ten)
PATTERN = f"row {ROW:07d}:"
DUMPS = {
    "mcp": ("huge_report", {"kilobytes": KILOBYTES}),
    "small": ("huge_report", {"kilobytes": SMALL}),
    "python": ("t_lines", {"count": 20_000}),
    "openapi": ("shop_big", {"size": 300_000}),
    "approved": ("t_guarded", {"count": 20_000}),
    "capped": ("t_capped", {"count": 20_000}),
}
EVENTS = {"toolwire": {"stream_tool_events": True}}


def lines(count: int) -> str:
    """A Python tool's long result.

    Args:
        count: how many lines.
    """
    return "".join(f"line {i}\n" for i in range(count))


def model(body: dict[str, Any]) -> Reply:
    """The scripted model. `dump KIND` calls KIND's long-result tool, reads bytes
    OFFSET..OFFSET+LENGTH of what was spilled, searches it for PATTERN, then answers `told:`
    and the last result; `dump KIND read HANDLE` reads HANDLE instead, once; `peek KIND`
    answers right after the call; `program` runs code mode's program on the report."""
    messages = body["messages"]
    words = _text([m for m in messages if m["role"] == "user"][-1]).split()
    told = [_text(m) for m in messages if m["role"] == "tool"]
    if words[0] == "program":
        if told:
            return Reply.text(f"told: {told[-1]}")
        code = "r = await huge_report(kilobytes=1200)\nprint(len(r.encode()), r[-31:])"
        return Reply.tool_calls([("run_code", {"code": code})])
    if not told:
        name, arguments = DUMPS[words[1]]
        return Reply.tool_calls([(name, arguments)])
    found = re.search(r'handle "(res_[0-9a-f]+)"', told[0])
    if words[0] == "peek" or found is None:
        return Reply.text(f"told: {told[-1][:400]}")
    handle = words[3] if words[2:3] == ["read"] else found[1]
    if len(told) == 1:
        offset = OFFSET if words[1] == "mcp" else SMALL_OFFSET
        read = {"handle": handle, "offset": offset, "length": LENGTH}
        return Reply.tool_calls([("read_result", read)])
    if len(told) == 2 and words[2:3] != ["read"]:
        search = {"handle": handle, "pattern": PATTERN, "context_lines": 1}
        return Reply.tool_calls([("read_result", search)])
    return Reply.text(f"told: {told[-1][:400]}")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


@dataclass
class Served:
    tenants: Tenants
    upstream: FakeUpstream

    def conversation(self, prompt: str) -> list[dict[str, Any]]:
        """The upstream requests of the last conversation that began with `prompt`."""
        found: list[dict[str, Any]] = []
        for request in self.upstream.requests:
            first = next(m for m in request["messages"] if m["role"] == "user")
            if _text(first) == prompt:
                if len([m for m in request["messages"] if m["role"] == "tool"]) == 0:
                    found = []
                found.append(request)
        return found


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served() -> AsyncIterator[Served]:
    registry = ToolRegistry()
    registry.register(lines, namespace="t")
    registry.register(lines, name="guarded", namespace="t")
    registry.register(lines, name="capped", namespace="t", max_result_size=50_000)
    async with (
        FakeUpstream(Reply.func(model)) as upstream,
        serve_results() as mcp_url,
        serve_shop(create_shop()) as shop,
    ):
        config = {
            "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
            "auth": AUTH,
            "tools": [
                {"mcp": {"url": mcp_url}, "namespace": "huge"},
                {"openapi": {"spec": f"{shop}/openapi.json"}, "namespace": "shop"},
            ],
            "execution": {"max_result_size": 8 * 1024 * 1024},
            "code_mode": {"tools": {"namespaces": ["huge"]}},
            "policy": {"rules": [{"match": {"name": "t.guarded"}, "action": "ask"}]},
        }
        async with serve_proxy(config, registry) as proxy, tenants_of(proxy, []) as tenants:
            yield Served(tenants, upstream)


def tool_names(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or ()]


def handle_of(preview: str) -> str:
    found = re.search(r'handle "(res_[0-9a-f]+)"', preview)
    assert found is not None, preview[:300]
    return found[1]


def read_range(answer: str) -> tuple[int, int, str]:
    """A range read's byte span and text."""
    header, text = answer.split("\n", 1)
    found = re.match(r"\[res_[0-9a-f]+: bytes (\d+)-(\d+) of (\d+)", header)
    assert found is not None, header
    return int(found[1]), int(found[2]), text


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_5_mb_mcp_result_is_previewed_then_read_in_ranges_and_searched(
    served: Served, stream: bool
) -> None:
    prompt = f"dump mcp {stream}"
    answer = await ask(served.tenants.a, stream=stream, messages=user(prompt), extra_body=EVENTS)
    first, second, third, last = served.conversation(prompt)
    assert "read_result" not in tool_names(first)  # offered once a result is spilled
    assert tool_names(second)[-1] == "read_result"
    preview = _text(second["messages"][-1])
    assert preview.startswith(MARK) and f"{len(REPORT)} bytes" in preview
    assert len(preview.encode()) < 5000
    head = preview.split("\n", 1)[1].split("\n[… ", 1)[0]
    assert REPORT.startswith(head.encode()) and len(head) > 2000
    # The range: from the first whole character at OFFSET on, exactly the report's bytes.
    start, end, text = read_range(_text(third["messages"][-1]))
    assert start in (OFFSET, OFFSET + 1) and 0 < end - start <= LENGTH
    assert REPORT[start:end] == text.encode()
    # The search: the matching line, its number and byte offset, a line either side.
    found = _text(last["messages"][-1]).splitlines()
    byte = REPORT.index(PATTERN.encode())
    row = report_text(KILOBYTES).splitlines()
    assert found[1:5] == [
        f"@ line {ROW + 1}, byte {byte}",
        f"  {ROW}| {row[ROW - 1]}",
        f"> {ROW + 1}| {row[ROW]}",
        f"  {ROW + 2}| {row[ROW + 1]}",
    ]
    assert "é" in row[ROW]
    assert answer.content.startswith(f"told: [{handle_of(preview)}: 1 match")
    if stream:  # the client's stream marks the spilled result, with its handle and size
        marks = [
            entry
            for chunk in answer.chunks
            for entry in ((chunk.choices[0].delta.model_extra or {}).get("toolwire") or {}).get(
                "tool_results", []
            )
            if "spilled" in entry
        ]
        assert [m["spilled"] for m in marks] == [
            {"handle": handle_of(preview), "bytes": len(REPORT)}
        ]
        assert marks[0]["content"] == preview


@pytest.mark.parametrize("kind", ["python", "openapi"])
async def test_long_results_of_every_source_kind_spill(served: Served, kind: str) -> None:
    prompt = f"peek {kind}"
    answer = await ask(served.tenants.a, stream=False, messages=user(prompt))
    _, second = served.conversation(prompt)
    preview = _text(second["messages"][-1])
    size = len(lines(20_000)) if kind == "python" else 300_000
    assert preview.startswith(f"{MARK}{size} bytes")
    assert answer.content.startswith(f"told: {MARK}")
    assert tool_names(second)[-1] == "read_result"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_an_approved_calls_long_result_spills_when_it_runs(
    served: Served, stream: bool
) -> None:
    asked = await ask(served.tenants.a, stream=stream, messages=user("peek approved"))
    (call,) = asked.tool_calls
    assert asked.finish_reason == "tool_calls" and asked.toolwire is not None
    history = answered("peek approved", call, {"approve": True})
    ran = await ask(served.tenants.a, stream=stream, messages=history)
    assert ran.content.startswith(f"told: {MARK}{len(lines(20_000))} bytes")
    assert tool_names(served.upstream.requests[-1])[-1] == "read_result"


async def test_a_result_past_its_cap_is_cut_before_it_is_kept(served: Served) -> None:
    answer = await ask(served.tenants.a, stream=False, messages=user("peek capped"))
    _, second = served.conversation("peek capped")
    preview = _text(second["messages"][-1])
    kept = truncate(lines(20_000), 50_000)  # as before spilling: cut, with its marker
    assert preview.startswith(f"{MARK}{len(kept.encode())} bytes")
    assert kept.endswith(preview[-200:]) and "characters]" in preview[-40:]
    assert answer.content.startswith(f"told: {MARK}{len(kept.encode())} bytes")


async def test_another_keys_handle_reads_as_an_unknown_one(served: Served) -> None:
    mine = await ask(served.tenants.a, stream=False, messages=user("peek small"))
    handle = handle_of(mine.content)
    prompt = f"dump small read {handle}"
    stolen = await ask(served.tenants.b, stream=True, messages=user(prompt))
    unknown = f"Error (tool_error): no kept result has the handle {handle!r} (unknown, or expired)"
    assert stolen.content == f"told: {unknown}"
    made_up = "res_" + "0" * 24
    guessed = await ask(served.tenants.a, stream=False, messages=user(f"dump small read {made_up}"))
    assert guessed.content == f"told: {unknown.replace(handle, made_up)}"
    # A's own handle still reads for A.
    again = await ask(served.tenants.a, stream=False, messages=user(f"dump small read {handle}"))
    assert again.content.startswith(f"told: [{handle}: bytes ")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_responses_show_the_preview_in_the_mcp_call_output(
    served: Served, stream: bool
) -> None:
    response = await respond(
        served.tenants.a,
        stream=stream,
        model=MODEL,
        input=f"dump small {stream}",
        extra_body=EVENTS,
    )
    calls = [item for item in response.output if item.type == "mcp_call"]
    assert [c.name for c in calls] == ["huge_report", "read_result", "read_result"]
    preview = calls[0].output
    size = len(report_text(SMALL).encode())
    assert preview.startswith(f"{MARK}{size} bytes")
    handle = handle_of(preview)
    start, end, text = read_range(calls[1].output)
    assert report_text(SMALL).encode()[start:end] == text.encode()
    assert calls[2].output.startswith(f"[{handle}: 0 matches")  # the row is past its end
    assert response.output_text.startswith(f"told: [{handle}: 0 matches")


async def test_a_stored_conversation_reads_its_spilled_result_after_previous_response_id(
    served: Served,
) -> None:
    first = await respond(served.tenants.a, stream=False, model=MODEL, input="peek small")
    assert first.output_text.startswith(f"told: {MARK}")
    handle = handle_of(first.output_text)
    follow = await respond(
        served.tenants.a,
        stream=True,
        model=MODEL,
        previous_response_id=first.id,
        input=f"dump small read {handle}",
    )
    assert follow.output_text.startswith(f"told: [{handle}: bytes ")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_messages_mark_the_spilled_result_on_the_message(
    served: Served, stream: bool
) -> None:
    request: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 64,
        "messages": user(f"peek small messages {stream}"),
        "extra_body": EVENTS,
    }
    client = served.tenants.anthropic_a
    vendor: dict[str, Any] = {}
    if stream:
        async with client.messages.stream(**request) as events:
            async for event in events:
                if event.type == "message_delta":  # the one event that ends the message
                    vendor = (event.model_extra or {})["toolwire"]
            message = await events.get_final_message()
    else:
        message = await client.messages.create(**request)
        vendor = (message.model_extra or {})["toolwire"]
    text = message.content[0].text  # type: ignore[union-attr]
    handle = handle_of(text)
    size = len(report_text(SMALL).encode())
    assert vendor["spilled"] == [
        {"tool_call_id": vendor["spilled"][0]["tool_call_id"], "handle": handle, "bytes": size}
    ]


async def test_a_program_gets_the_whole_result(served: Served) -> None:
    prompt = "program"
    answer = await ask(
        served.tenants.a,
        stream=False,
        messages=user(prompt),
        extra_body={"toolwire": {"code_mode": True}},
    )
    whole = report_text(1200)  # past the 1 MiB a result was once cut to
    assert answer.content == f"told: {len(whole.encode())} {whole[-31:]}\n"
    assert MARK not in answer.content
