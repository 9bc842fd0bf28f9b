"""A relayed answer read back into events: the very events the loop's assembler makes of its
bytes, read from the fields of the `Relayable` the codec made (no second parse)."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest

from proxy.fronts.relayed import relayed_events
from proxy.turn.assembler import Assembler
from proxy.turn.events import Finished, LoopEvent
from proxy.upstreams import direct_answers
from proxy.upstreams.base import Relayable, filled
from proxy.upstreams.openai_chat import ChatCodec, as_chunk, relayable

MODEL = "fake-model"
TEXTS: tuple[Any, ...] = (None, "Hello, \u00e9t\u00e9 \U0001f600", "x")
USAGES: tuple[dict[str, Any], ...] = (
    {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    {
        "prompt_tokens": 12,
        "completion_tokens": 3,
        "total_tokens": 15,
        "prompt_tokens_details": {"cached_tokens": 4},
        "completion_tokens_details": {"reasoning_tokens": 2},
    },
    {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
)


def answers() -> list[dict[str, Any]]:
    """Unstreamed answers of every relayable shape: texts present, null or absent; both
    finishes; usage with and without details; vLLM's null fields."""
    made = []
    shapes = itertools.product(TEXTS, TEXTS, TEXTS, ("stop", "length"), USAGES, (False, True))
    for content, reasoning, refusal, finish, usage, vllm in shapes:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning is not None or vllm:
            message["reasoning_content"] = reasoning
        if refusal is not None or vllm:
            message["refusal"] = refusal
        if vllm:
            message["tool_calls"] = []
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        answer = {
            "id": "chatcmpl-0123",
            "object": "chat.completion",
            "created": 1700000000,
            "model": MODEL,
            "choices": [choice],
            "usage": usage,
        }
        if vllm:
            answer["kv_transfer_params"] = None
        made.append(answer)
    return made


def assembled(raw: bytes) -> list[LoopEvent]:
    """What the loop yields for a one-round turn answered by `raw` (`_ask`, `_answered`)."""
    assembler = Assembler()
    events: list[LoopEvent] = []
    delta = assembler.feed(as_chunk(orjson.loads(raw)))
    if delta is not None:
        events.append(delta)
    answer = assembler.finish()
    assert not answer.tool_calls
    events.append(Finished(answer.finish_reason, answer.usage, relay=raw))
    return events


def relayed(answer: dict[str, Any]) -> Relayable:
    """`answer` as the loop hands it on (`ToolLoop.relay`): the codec's `Relayable`, the
    upstream's bytes filled in by the transport, its fields made (`whole=True`)."""
    (chunk,) = filled(ChatCodec(MODEL, stream=False).whole(answer))
    assert chunk.__class__ is Relayable  # only such answers are read back
    chunk.raw = orjson.dumps(answer)
    return chunk  # type: ignore[return-value]


def translated() -> list[Relayable]:
    """Whole text answers of a translating upstream (Anthropic, Gemini) as its codec relays
    them: the chunk it made, and the Chat body it renders as `raw` (an empty text null)."""
    made = []
    for text, finish, usage in itertools.product(("", "x", TEXTS[1]), ("stop", "length"), USAGES):
        chunk = {
            "id": "msg_0123",
            "model": MODEL,
            "choices": direct_answers.text_choices(text, finish, usage),
            "usage": usage,
        }
        relayable = direct_answers.relayable(chunk, MODEL)
        assert relayable.__class__ is Relayable
        made.append(relayable)
    return made  # type: ignore[return-value]


@pytest.mark.parametrize("answer", answers())
def test_a_relayable_answer_reads_back_as_the_assembler_reads_it(answer: dict[str, Any]) -> None:
    assert relayable(answer, MODEL) is not None
    made = relayed(answer)
    assert made.raw is not None
    assert relayed_events(made) == assembled(made.raw)


@pytest.mark.parametrize("made", translated())
def test_a_translated_answer_reads_back_as_the_assembler_reads_its_bytes(
    made: Relayable,
) -> None:
    assert made.raw is not None
    assert relayed_events(made) == assembled(made.raw)
