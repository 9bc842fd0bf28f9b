"""The builder renderers: the SSE stream and the JSON body made from one builder agree."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest

from proxy.errors import UpstreamError
from proxy.fronts.messages.render import MessageBuilder
from proxy.fronts.renderers import Builder, BuilderJson, BuilderStream
from proxy.fronts.responses.builder import ResponseBuilder
from proxy.fronts.responses.plan import ResponsePlan
from proxy.turn.events import ContentDelta, Finished, ToolsFinished, ToolsStarted, Usage
from registry import ToolCall, ToolResult

USAGE = Usage(7, 3, 10)
CALL = ToolCall("call_1", "t_add", '{"a": 1}')


def responses() -> ResponseBuilder:
    return ResponseBuilder(ResponsePlan(model="m", echo={}, labels={}, show_rounds=False))


def events_of(frames: list[bytes]) -> list[dict[str, object]]:
    out = []
    for frame in b"".join(frames).split(b"\n\n"):
        if frame.startswith(b"event: "):
            kind, data = frame.split(b"\n")
            event = orjson.loads(data.removeprefix(b"data: "))
            assert kind == b"event: " + event["type"].encode()
            out.append(event)
    return out


def test_the_stream_ends_with_the_object_the_body_holds() -> None:
    turn = (ContentDelta(content="Hello"), Finished("stop", USAGE))
    stream = BuilderStream(responses())
    frames = [stream.start()]
    for event in turn:
        frames += stream.frames(event)
    body = BuilderJson(responses())
    for event in turn:
        body.feed(event)
    streamed = events_of(frames)[-1]["response"]
    answered = orjson.loads(body.encoded())
    assert isinstance(streamed, dict)
    assert streamed["output"][0]["content"] == answered["output"][0]["content"]
    assert streamed["status"] == answered["status"] == "completed"


def test_a_hidden_tool_round_keeps_the_stream_alive() -> None:
    stream = BuilderStream(responses())
    assert stream.frames(ToolsStarted((CALL,))) == [b": tools running\n\n"]
    assert stream.frames(ToolsFinished((CALL,), (ToolResult("call_1", "2"),))) == []
    pinged = BuilderStream(MessageBuilder("m")).frames(ToolsStarted((CALL,)))
    assert [e["type"] for e in events_of(pinged)] == ["ping"]  # Anthropic has its own


def test_a_failed_stream_ends_in_the_fronts_error_event() -> None:
    stream = BuilderStream(MessageBuilder("m"))
    stream.frames(ContentDelta(content="part"))
    events = events_of(stream.error(UpstreamError("upstream went away")))
    assert [e["type"] for e in events] == ["content_block_stop", "error"]


@pytest.mark.parametrize("builder", [responses, lambda: MessageBuilder("m")])
def test_a_body_without_the_turns_end_is_an_error(builder: Callable[[], Builder[Any]]) -> None:
    body = BuilderJson(builder())
    body.feed(ContentDelta(content="cut"))
    with pytest.raises(RuntimeError, match="without a Finished event"):
        body.encoded()
