"""A stored response's stream (`_Kept`): the loop's events pass on as they come, the response is
stored once its end is folded and before the client is sent that end, and the client gets
the very frames a response that is not stored gets, its last holding the bytes stored."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from proxy.errors import ProxyError
from proxy.fronts.exchange import stream
from proxy.fronts.responses.builder import STORED, ResponseBuilder
from proxy.fronts.responses.handler import _Kept, _Prepared
from proxy.fronts.responses.plan import ResponsePlan, echoed
from proxy.fronts.responses.render import ResponseStream
from proxy.state.base import StoredResponse
from proxy.turn.events import (
    ApprovalRequest,
    ContentDelta,
    Finished,
    LoopEvent,
    ToolsFinished,
    ToolsStarted,
    Usage,
)
from registry import ToolCall, ToolResult

USAGE = Usage(7, 3, 10, cached_tokens=2)
SHOWN = ToolCall(id="call_9", name="t_add", arguments={"a": 1})
HANDED = ToolCall(id="call_1", name="lookup", arguments='{"q": "x"}')
PAUSED = ToolCall(id="call_tw0123", name="t_add", arguments={"a": 1})
PIECES: list[LoopEvent] = [
    ContentDelta("Hello"),
    ContentDelta(' "quoted" \\ été 😀\n'),
    ContentDelta("raw", raw=b"r\\u0061w"),
    ContentDelta(reasoning="think"),
    ContentDelta(refusal="no"),
    ContentDelta("x", logprobs=({"token": "x", "logprob": -0.2},)),
    ContentDelta("last", ending=True),
    ToolsStarted((SHOWN,)),
    ToolsFinished((SHOWN,), (ToolResult("call_9", "3"),)),
]
ENDS = [
    Finished("stop", USAGE),
    Finished("length", USAGE),
    Finished("content_filter", Usage()),
    Finished("stop", USAGE, stopped_by="time"),
    Finished("tool_calls", USAGE, tool_calls=(HANDED,)),
    Finished(
        "tool_calls",
        USAGE,
        tool_calls=(PAUSED,),
        approvals=(ApprovalRequest(PAUSED, "t.add", "asks", 1),),
    ),
]


def scripts(count: int = 120) -> list[list[LoopEvent]]:
    """Generated turns: up to eight of the pieces in any order, then one of the ends."""
    rng = random.Random(29)
    made = []
    for _ in range(count):
        pieces = [rng.choice(PIECES) for _ in range(rng.randrange(9))]
        made.append([*pieces, rng.choice(ENDS)])
    return made


def plan(show_rounds: bool) -> ResponsePlan:
    echo = echoed({"model": "m", "input": "hi", "instructions": "Be brief.", "store": True})
    return ResponsePlan("m", echo, {"t_add": "t"}, show_rounds)


def parsed(frames: bytes) -> list[tuple[bytes, Any]]:
    """Each frame's event line and its data (a finished response without its time)."""
    out = []
    for frame in frames.split(b"\n\n")[:-1]:
        if frame.startswith(b":"):  # a comment (a hidden tool round)
            out.append((frame, None))
            continue
        kind, data = frame.split(b"\n", 1)
        event = orjson.loads(data.removeprefix(b"data: "))
        if isinstance(event.get("response"), dict):
            event["response"].pop("completed_at")
        out.append((kind, event))
    return out


class _Store:
    """A response store that notes each put, and what the client was sent by then."""

    def __init__(self, sent: list[dict[str, Any]], fails: bool = False) -> None:
        self.sent = sent
        self.fails = fails
        self.puts: list[tuple[str, StoredResponse, bytes | None, bytes]] = []

    async def put(self, key: str, stored: StoredResponse, body: bytes | None = None) -> None:
        before = b"".join(m.get("body", b"") for m in self.sent)
        self.puts.append((key, stored, body, before))
        if self.fails:
            raise ProxyError("the store is down")


async def served(
    events: list[LoopEvent], shown: ResponsePlan, kept: bool, fails: bool = False
) -> tuple[list[bytes], _Store, ResponseBuilder]:
    """The response's stream as `exchange.stream` sends it, stored or not."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def loop() -> AsyncIterator[LoopEvent]:
        for event in events:
            yield event

    builder = ResponseBuilder(shown)
    store = _Store(sent, fails)
    turn: Any = SimpleNamespace(owner="key-a")
    asked = [{"type": "message", "role": "user", "content": "hi"}]
    prepared = _Prepared(turn, shown, asked, True, True)
    source: Any = loop()
    if kept:
        builder.keeps = True
        source = _Kept(source, builder, prepared, store)  # type: ignore[arg-type]
    context: Any = SimpleNamespace(request_id="req_1", reply=None)
    await stream(source, ResponseStream(builder), send, context, lambda exc: exc.body())
    writes = [m["body"] for m in sent if m["type"] == "http.response.body"]
    return writes, store, builder


@pytest.mark.parametrize("show_rounds", [False, True])
async def test_a_stored_stream_is_the_one_an_unstored_response_sends(show_rounds: bool) -> None:
    ends = set()
    for events in scripts():
        shown = plan(show_rounds)
        writes, store, builder = await served(events, shown, kept=True)
        unstored, nothing, _ = await served(events, shown, kept=False)
        kept = b"".join(writes)
        assert parsed(kept) == parsed(b"".join(unstored))
        assert nothing.puts == []
        [(key, stored, body, before)] = store.puts
        assert kept.startswith(before)
        assert b"response.completed" not in before and b"response.incomplete" not in before
        assert key == builder.plan.id and stored.owner == "key-a"
        assert body == orjson.dumps(builder.final()) and stored.response is builder.final()
        last = kept.rsplit(b"\n\n", 2)[-2]
        assert last.endswith(b',"response":' + body + b"}")  # the bytes stored, as they are
        assert stored.conversation[1:] == builder.output
        ends.add(last.split(b"\n", 1)[0])
    assert ends == {b"event: response.completed", b"event: response.incomplete"}


async def test_a_stream_whose_store_fails_ends_failed_without_its_end() -> None:
    events: list[LoopEvent] = [ContentDelta("Hello"), Finished("stop", USAGE)]
    writes, store, builder = await served(events, plan(False), kept=True, fails=True)
    kinds = [kind for kind, _ in parsed(b"".join(writes))]
    assert kinds[-1] == b"event: response.failed"
    assert b"event: response.completed" not in kinds
    assert b"event: response.output_item.done" not in kinds
    assert len(store.puts) == 1 and builder.status == "failed"


async def test_a_stored_builder_hands_its_end_over_with_stored() -> None:
    builder = ResponseBuilder(plan(False))
    builder.keeps = True
    builder.start()
    assert builder.feed(ContentDelta("Hi")) != []
    assert builder.feed(Finished("stop", USAGE)) == []
    ending = builder.feed(STORED)
    assert [e["type"] for e in ending][-1] == "response.completed"
    assert orjson.dumps(ending[-1]["response"]) == builder.body()
    assert builder.feed(STORED) == []  # handed over once
