"""Renderers: one coherent `chat.completion.chunk` SSE stream, or one `chat.completion` body."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from proxy import sse
from proxy.errors import BadRequestError, UpstreamError
from proxy.fronts.chat.render import ChatJsonRenderer, ChatStreamRenderer, ResponseMeta
from proxy.turn.assembler import Usage
from proxy.turn.events import ContentDelta, Finished, ToolsFinished, ToolsStarted
from registry import ToolCall, ToolResult

META = ResponseMeta(model="toolwire-demo", id="chatcmpl-test", created=1700000000)
USAGE = Usage(11, 7, 18)
CALL = ToolCall(id="call_1", name="client_lookup", arguments={"q": "x"})


def parse_frames(raw: bytes) -> list[Any]:
    """Decode SSE bytes strictly: every frame is one `data:` line or one comment line."""
    assert raw.endswith(b"\n\n"), raw
    events: list[Any] = []
    for frame in raw.decode("utf-8").split("\n\n")[:-1]:
        assert "\n" not in frame, f"a frame spans several lines: {frame!r}"
        if frame.startswith(": "):
            events.append(("comment", frame[2:]))
        else:
            assert frame.startswith("data: "), frame
            data = frame[len("data: ") :]
            events.append(data if data == "[DONE]" else json.loads(data))
    return events


def render(*events: Any, include_usage: bool = False, tool_events: bool = False) -> list[Any]:
    renderer = ChatStreamRenderer(META, include_usage=include_usage, tool_events=tool_events)
    raw = renderer.start() + b"".join(b"".join(renderer.frames(e)) for e in events)
    return parse_frames(raw)


def chunks_of(frames: list[Any]) -> list[dict[str, Any]]:
    return [f for f in frames if isinstance(f, dict)]


def test_stream_is_valid_sse_with_one_id_and_done_last() -> None:
    frames = render(
        ContentDelta("Hel"),
        ContentDelta("lo"),
        Finished("stop", USAGE),
        include_usage=True,
    )
    assert frames[-1] == "[DONE]"
    assert frames.count("[DONE]") == 1
    chunks = chunks_of(frames)
    assert {c["id"] for c in chunks} == {"chatcmpl-test"}
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert {c["model"] for c in chunks} == {"toolwire-demo"}
    assert {c["created"] for c in chunks} == {1700000000}


def test_role_chunk_then_content_then_one_finish() -> None:
    frames = render(ContentDelta("Hel"), ContentDelta("lo"), Finished("stop", USAGE))
    choices = [c["choices"][0] for c in chunks_of(frames)]
    assert choices[0]["delta"] == {"role": "assistant", "content": ""}
    assert "".join(ch["delta"].get("content", "") for ch in choices) == "Hello"
    finishes = [ch["finish_reason"] for ch in choices if ch["finish_reason"] is not None]
    assert finishes == ["stop"]
    assert choices[-1]["finish_reason"] == "stop"
    assert all(ch["index"] == 0 for ch in choices)


def test_reasoning_delta_goes_out_as_reasoning_content() -> None:
    frames = render(ContentDelta(reasoning="hmm"), Finished("stop", USAGE))
    assert chunks_of(frames)[1]["choices"][0]["delta"] == {"reasoning_content": "hmm"}


def test_content_with_quotes_newlines_and_unicode_survives() -> None:
    text = 'He said "hi"\nthen \\ left ☕ </script>'
    frames = render(ContentDelta(text), Finished("stop", USAGE))
    assert chunks_of(frames)[1]["choices"][0]["delta"]["content"] == text


def test_usage_frame_only_when_include_usage() -> None:
    without = chunks_of(render(Finished("stop", USAGE)))
    assert all("usage" not in c for c in without)
    with_usage = render(Finished("stop", USAGE), include_usage=True)
    usage_chunk = with_usage[-2]
    assert usage_chunk["choices"] == []
    assert usage_chunk["id"] == "chatcmpl-test"
    assert usage_chunk["usage"] == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    assert len([c for c in chunks_of(with_usage) if "usage" in c]) == 1


def test_client_tool_calls_frame_before_finish() -> None:
    frames = render(Finished("tool_calls", USAGE, tool_calls=(CALL,)))
    chunks = chunks_of(frames)
    calls = chunks[-2]["choices"][0]["delta"]["tool_calls"]
    assert calls == [
        {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "client_lookup", "arguments": '{"q":"x"}'},
        }
    ]
    assert chunks[-2]["choices"][0]["finish_reason"] is None
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_several_client_calls_are_indexed_in_order() -> None:
    second = ToolCall(id="call_2", name="other", arguments="{}")
    chunks = chunks_of(render(Finished("tool_calls", USAGE, tool_calls=(CALL, second))))
    calls = chunks[-2]["choices"][0]["delta"]["tool_calls"]
    assert [(c["index"], c["id"]) for c in calls] == [(0, "call_1"), (1, "call_2")]


def test_toolwire_extra_rides_on_the_finish_delta() -> None:
    extra = {"stopped_by": "max_iterations"}
    chunks = chunks_of(render(Finished("stop", USAGE, stopped_by="max_iterations")))
    last = chunks[-1]["choices"][0]
    assert last["finish_reason"] == "stop"
    assert last["delta"] == {"toolwire": extra}
    assert all("toolwire" not in c["choices"][0]["delta"] for c in chunks[:-1])


def test_finish_delta_is_empty_without_extra() -> None:
    chunks = chunks_of(render(Finished("length", USAGE)))
    assert chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "length"}


def test_tool_rounds_are_hidden_unless_asked() -> None:
    result = ToolResult(call_id="call_1", content="42")
    hidden = render(ToolsStarted((CALL,)), ToolsFinished((CALL,), (result,)))
    assert hidden[1:] == [("comment", "tools running")]


def test_tool_rounds_are_shown_as_toolwire_deltas_when_asked() -> None:
    result = ToolResult(call_id="call_1", content="boom", is_error=True, error_kind="exception")
    frames = render(ToolsStarted((CALL,)), ToolsFinished((CALL,), (result,)), tool_events=True)
    started, finished = (c["choices"][0]["delta"]["toolwire"] for c in chunks_of(frames)[1:])
    assert started["tool_calls"][0]["function"] == {
        "name": "client_lookup",
        "arguments": '{"q":"x"}',
    }
    assert finished == {
        "tool_results": [{"tool_call_id": "call_1", "content": "boom", "is_error": True}]
    }


@pytest.mark.parametrize(
    "error", [UpstreamError("upstream 'x' broke off"), BadRequestError("bad", param="messages")]
)
def test_error_frames_carry_openai_error_then_done(error: Any) -> None:
    renderer = ChatStreamRenderer(META, include_usage=True, tool_events=False)
    frames = parse_frames(renderer.start() + b"".join(renderer.error(error)))
    assert frames[-1] == "[DONE]"
    assert frames[-2] == error.body()
    assert set(frames[-2]["error"]) == {"message", "type", "param", "code"}
    assert frames[-2]["error"]["message"] == error.message


def test_json_renderer_folds_content_usage_and_finish() -> None:
    renderer = ChatJsonRenderer(META)
    for event in (ContentDelta("Hel"), ContentDelta("lo"), Finished("stop", USAGE)):
        renderer.feed(event)
    body = renderer.body()
    assert body["id"] == "chatcmpl-test"
    assert body["object"] == "chat.completion"
    assert body["model"] == "toolwire-demo"
    assert body["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello"},
            "finish_reason": "stop",
            "logprobs": None,
        }
    ]
    assert body["usage"] == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    json.dumps(body)


def test_json_renderer_returns_client_tool_calls_with_string_arguments() -> None:
    renderer = ChatJsonRenderer(META)
    renderer.feed(Finished("tool_calls", USAGE, tool_calls=(CALL,)))
    body = renderer.body()
    message = body["choices"][0]["message"]
    assert message["content"] is None
    assert message["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "client_lookup", "arguments": '{"q":"x"}'},
        }
    ]
    assert body["choices"][0]["finish_reason"] == "tool_calls"


def test_json_renderer_keeps_reasoning_and_extra() -> None:
    renderer = ChatJsonRenderer(META)
    renderer.feed(ContentDelta(reasoning="think "))
    renderer.feed(ContentDelta(reasoning="hard"))
    renderer.feed(Finished("stop", USAGE, stopped_by="timeout"))
    message = renderer.body()["choices"][0]["message"]
    assert message["reasoning_content"] == "think hard"
    assert message["toolwire"] == {"stopped_by": "timeout"}


def test_json_renderer_without_finished_raises() -> None:
    renderer = ChatJsonRenderer(META)
    renderer.feed(ContentDelta("partial"))
    with pytest.raises(RuntimeError, match="without a Finished event"):
        renderer.body()


def test_response_ids_are_unique_per_response() -> None:
    assert ResponseMeta.new("m").id != ResponseMeta.new("m").id
    ids = [ResponseMeta.new("m").id for _ in range(200)]
    assert all(re.fullmatch(r"chatcmpl-[0-9a-f]{24}", i) for i in ids), ids
    assert any(i[9] == "0" for i in ids)  # zero-padded: 24 digits even for a small number


@pytest.mark.parametrize("model", ["m", 'm"é\n\\', "☕ </script>"])
@pytest.mark.parametrize("response_id", ["chatcmpl-test", 'odd"id\t'])
def test_a_chunk_encoder_frames_as_the_one_of_its_head(model: str, response_id: str) -> None:
    # `ChoiceEncoder.chunks` formats the head the renderer's frames share; the general encoder
    # dumps it from a dict: every frame is the same.
    created = 1700000000
    head = {"id": response_id, "object": "chat.completion.chunk", "created": created}
    general = sse.ChoiceEncoder({**head, "model": model})
    formatted = sse.ChoiceEncoder.chunks(response_id, created, model)
    assert formatted.opening() == general.opening()
    assert formatted.ending("stop") == general.ending("stop")
    assert formatted.frame({"content": "x"}, "length") == general.frame({"content": "x"}, "length")
    assert formatted.text(b"hi", True) == general.text(b"hi", True)
    meta = ResponseMeta(model, response_id, created)
    renderer = ChatStreamRenderer(meta, False, False)
    assert renderer.frames(ContentDelta("aé", raw=b"a\\u00e9")) == [general.text(b"a\\u00e9")]
    reasoning = renderer.frames(ContentDelta(None, "aé", raw=b"a\\u00e9"))
    assert reasoning == [general.text(b"a\\u00e9", reasoning=True)]
