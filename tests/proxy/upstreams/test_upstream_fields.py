"""Fields a client relies on survive the proxy: log-probabilities, refusals, usage details."""

from __future__ import annotations

import orjson

from proxy.fronts.chat.render import ChatJsonRenderer, ChatStreamRenderer, ResponseMeta
from proxy.fronts.responses.builder import ResponseBuilder
from proxy.fronts.responses.plan import ResponsePlan
from proxy.turn.assembler import Assembler
from proxy.turn.events import ContentDelta, Finished, Usage
from proxy.upstreams import as_chunk

TOKEN = {"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}


def chunk(delta: dict, **choice: object) -> dict:
    return {"choices": [{"index": 0, "delta": delta, **choice}]}


def test_assembler_keeps_logprobs_and_refusals() -> None:
    assembler = Assembler()
    with_logprobs = assembler.feed(chunk({"content": "Hi"}, logprobs={"content": [TOKEN]}))
    assert with_logprobs == ContentDelta("Hi", logprobs=(TOKEN,))
    assert assembler.feed(chunk({"refusal": "I can't"})) == ContentDelta(refusal="I can't")
    assert assembler.feed(chunk({"content": "plain"}, logprobs=None)) == ContentDelta("plain")


def test_unstreamed_answer_keeps_logprobs() -> None:
    payload = {
        "choices": [
            {
                "message": {"role": "assistant", "content": "Hi"},
                "logprobs": {"content": [TOKEN]},
                "finish_reason": "stop",
            }
        ]
    }
    delta = Assembler().feed(as_chunk(payload))
    assert delta is not None and delta.logprobs == (TOKEN,)


def test_usage_details_are_summed_and_rendered() -> None:
    raw = {
        "prompt_tokens": 10,
        "completion_tokens": 4,
        "total_tokens": 14,
        "prompt_tokens_details": {"cached_tokens": 6},
        "completion_tokens_details": {"reasoning_tokens": 3},
    }
    usage = Usage.from_chat(raw) + Usage.from_chat(raw)
    assert usage.as_dict() == {
        "prompt_tokens": 20,
        "completion_tokens": 8,
        "total_tokens": 28,
        "prompt_tokens_details": {"cached_tokens": 12},
        "completion_tokens_details": {"reasoning_tokens": 6},
    }
    assert Usage.from_chat({"prompt_tokens": 1, "completion_tokens": 1}).as_dict() == {
        "prompt_tokens": 1,
        "completion_tokens": 1,
        "total_tokens": 2,
    }


def test_chat_stream_and_body_carry_logprobs_and_refusal() -> None:
    meta = ResponseMeta.new("m")
    stream = ChatStreamRenderer(meta, include_usage=False, tool_events=False)
    (frame,) = stream.frames(ContentDelta("Hi", logprobs=(TOKEN,)))
    choice = orjson.loads(frame.removeprefix(b"data: "))["choices"][0]
    assert choice["logprobs"] == {"content": [TOKEN]} and choice["delta"] == {"content": "Hi"}
    body = ChatJsonRenderer(meta)
    body.feed(ContentDelta("Hi", logprobs=(TOKEN,)))
    body.feed(ContentDelta(refusal="no"))
    body.feed(Finished("stop", Usage()))
    (answer,) = body.body()["choices"]
    assert answer["logprobs"] == {"content": [TOKEN]}
    assert answer["message"]["refusal"] == "no"


def test_responses_output_text_carries_logprobs_and_refusals_get_their_part() -> None:
    builder = ResponseBuilder(ResponsePlan(model="m", echo={}, labels={}, show_rounds=False))
    events = builder.start()
    events += builder.feed(ContentDelta("Hi", logprobs=(TOKEN,)))
    events += builder.feed(ContentDelta(refusal="I can't help with that"))
    events += builder.feed(Finished("stop", Usage()))
    delta = next(e for e in events if e["type"] == "response.output_text.delta")
    assert delta["logprobs"] == [TOKEN]
    text, refusal = events[-1]["response"]["output"]
    assert text["content"][0]["logprobs"] == [TOKEN]
    assert refusal["content"] == [{"type": "refusal", "refusal": "I can't help with that"}]
    assert "response.refusal.done" in [e["type"] for e in events]
