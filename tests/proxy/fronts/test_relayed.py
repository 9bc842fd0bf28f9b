"""A relayed answer read back into events: the very events the loop's assembler makes of it."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest

from proxy.fronts.relayed import relayed_events
from proxy.turn.assembler import Assembler
from proxy.turn.events import Finished, LoopEvent
from proxy.upstreams.openai_chat import as_chunk, relayable

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


@pytest.mark.parametrize("answer", answers())
def test_a_relayable_answer_reads_back_as_the_assembler_reads_it(answer: dict[str, Any]) -> None:
    raw = orjson.dumps(answer)
    assert relayable(answer, MODEL) is not None  # only such answers are read back
    assert relayed_events(raw) == assembled(raw)
