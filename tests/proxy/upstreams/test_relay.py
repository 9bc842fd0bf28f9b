"""An unstreamed answer relayed as the upstream's bytes means what the slow path renders
(the same fields and values; beyond them only nulls, as vLLM sends); anything the slow path
would change is never relayed."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from proxy.fronts.chat.render import ChatJsonRenderer, ResponseMeta
from proxy.turn.assembler import Assembler
from proxy.turn.events import Finished, Usage
from proxy.upstreams.base import Relayable, filled
from proxy.upstreams.openai_chat import ChatCodec, as_chunk, relayable

MODEL = "served-model"


def answer(**message: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-upstream",
        "object": "chat.completion",
        "created": 1700000000,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello.", **message},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
    }


def rendered(payload: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
    """What the Chat front sends for this upstream answer, and what the slow path renders."""
    chunks = filled(ChatCodec(MODEL).whole(copy.deepcopy(payload)))  # as the loop reads them
    for chunk in chunks:
        if chunk.__class__ is Relayable:
            chunk.raw = orjson.dumps(payload)  # as the transport does
    assembler = Assembler()
    renderer = ChatJsonRenderer(ResponseMeta.new(MODEL))
    for chunk in chunks:
        delta = assembler.feed(chunk)
        if delta is not None:
            renderer.feed(delta)
    done = assembler.finish()
    usage = Usage() + (done.usage or Usage())
    renderer.feed(Finished(done.finish_reason, usage, relay=done.raw))
    return renderer.encoded(), renderer.body()


def without_identity(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("id", "created")}


def meaning(value: Any) -> Any:
    """A body without what says nothing: null fields, and vLLM's empty `tool_calls`."""
    if isinstance(value, dict):
        return {
            k: meaning(v)
            for k, v in value.items()
            if v is not None and not (k == "tool_calls" and v == [])
        }
    if isinstance(value, list):
        return [meaning(v) for v in value]
    return value


def vllm_answer() -> dict[str, Any]:
    """An answer as vLLM sends it: every field it knows, most of them null."""
    payload = answer(reasoning_content=None, tool_calls=[], function_call=None, refusal=None)
    payload["choices"][0].update(stop_reason=None, token_ids=None)
    payload["usage"]["prompt_tokens_details"] = None
    payload.update(
        system_fingerprint=None,
        service_tier=None,
        prompt_logprobs=None,
        prompt_token_ids=None,
        kv_transfer_params=None,
    )
    return payload


def _with(path: tuple[str | int, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(payload: dict[str, Any]) -> None:
        target: Any = payload
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def changed(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    payload = answer()
    change(payload)
    return payload


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda payload: payload["usage"].pop(key)


RELAYED = {
    "plain": answer(),
    "reasoning": answer(reasoning_content="Think first."),
    "refusal": answer(content=None, refusal="I can't help with that."),
    "cut by length": {
        **answer(),
        "choices": [{**answer()["choices"][0], "finish_reason": "length"}],
    },
    "cached tokens": {
        **answer(),
        "usage": {
            "prompt_tokens": 9,
            "completion_tokens": 2,
            "total_tokens": 11,
            "prompt_tokens_details": {"cached_tokens": 4},
        },
    },
    "vLLM's null fields": vllm_answer(),
    "a vendor field in the choice, null": changed(_with(("choices", 0, "stop_reason"), None)),
    "an empty tool_calls list": changed(_with(("choices", 0, "message", "tool_calls"), [])),
    "no logprobs key": changed(lambda p: p["choices"][0].pop("logprobs")),
    "a null content": answer(content=None),
}


@pytest.mark.parametrize("payload", RELAYED.values(), ids=RELAYED.keys())
def test_relayed_bytes_equal_the_slow_path(payload: dict[str, Any]) -> None:
    assert relayable(payload, MODEL)
    sent, slow = rendered(payload)
    assert sent == orjson.dumps(payload)  # the upstream's own bytes
    assert meaning(without_identity(orjson.loads(sent))) == meaning(without_identity(slow))


SLOW = {
    "vendor value (vLLM)": _with(("kv_transfer_params",), {"remote": "x"}),
    "vendor value in the choice": _with(("choices", 0, "stop_reason"), 128001),
    "vendor value in the message": _with(("choices", 0, "message", "annotations"), [{"a": 1}]),
    "vendor value in usage": _with(("usage", "prompt_tokens_details"), {"audio_tokens": 1}),
    "system fingerprint": _with(("system_fingerprint",), "fp_1"),
    "toolwire_provider": _with(("choices", 0, "message", "toolwire_provider"), {"x": 1}),
    "another model": _with(("model",), "other-model"),
    "empty content": _with(("choices", 0, "message", "content"), ""),
    "no content key": lambda p: p["choices"][0]["message"].pop("content"),
    "empty reasoning": _with(("choices", 0, "message", "reasoning_content"), ""),
    "a null role": _with(("choices", 0, "message", "role"), None),
    "finish tool_calls without calls": _with(("choices", 0, "finish_reason"), "tool_calls"),
    "upper-case finish": _with(("choices", 0, "finish_reason"), "STOP"),
    "log-probabilities": _with(("choices", 0, "logprobs"), {"content": []}),
    "usage without total": _drop("total_tokens"),
    "two choices": lambda p: p["choices"].append(copy.deepcopy(p["choices"][0])),
    "chunk object": _with(("object",), "chat.completion.chunk"),
    "no id": lambda p: p.pop("id"),
    "no index": lambda p: p["choices"][0].pop("index"),
    "no finish_reason": lambda p: p["choices"][0].pop("finish_reason"),
    "no role": lambda p: p["choices"][0]["message"].pop("role"),
    "no content key beside a refusal": lambda p: (
        p["choices"][0]["message"].update(content=None, refusal="No.")
        or p["choices"][0]["message"].pop("content")
    ),
    "usage of three other fields": _with(
        ("usage",), {"prompt_tokens": 9, "completion_tokens": 2, "total": 11}
    ),
    "a vendor field beside six": lambda p: p.pop("created") and p.update(created_at=1),
}


@pytest.mark.parametrize("change", SLOW.values(), ids=SLOW.keys())
def test_answers_the_slow_path_would_change_are_rebuilt(
    change: Callable[[dict[str, Any]], None],
) -> None:
    payload = answer()
    change(payload)
    assert not relayable(payload, MODEL)
    sent, slow = rendered(payload)
    assert orjson.loads(sent) == slow
    for vendor in ("kv_transfer_params", "system_fingerprint"):
        assert vendor not in slow
    assert "stop_reason" not in slow["choices"][0]
    assert "toolwire_provider" not in slow["choices"][0]["message"]


def test_tool_calls_are_never_relayed() -> None:
    payload = answer(
        tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    )
    assert not relayable(payload, MODEL)


def test_a_copied_chunk_loses_its_bytes() -> None:
    # Adapters that rewrite a chunk copy it; the copy is a plain dict and is never relayed.
    (chunk,) = filled(ChatCodec(MODEL).whole(answer()))
    assert chunk.__class__ is Relayable
    assert {**chunk}.__class__ is dict


@pytest.mark.parametrize("payload", RELAYED.values(), ids=RELAYED.keys())
def test_a_relayable_chunk_is_the_chunk_the_slow_path_reads(payload: dict[str, Any]) -> None:
    (chunk,) = ChatCodec(MODEL).whole(copy.deepcopy(payload))
    assert chunk.__class__ is Relayable
    assert dict(chunk) == {}, "its fields wait for a reader (the Chat front reads none)"
    expected = as_chunk(payload)
    expected["choices"][0]["logprobs"] = None  # a relayed answer's, always null
    assert chunk.fields() is chunk and dict(chunk) == expected
    assert list(chunk) == list(expected), "in the same order"
    assert chunk.fields() is chunk and dict(chunk) == expected, "made once"
    assert (chunk.raw, chunk.finish_reason) == (None, payload["choices"][0]["finish_reason"])
    assert chunk.usage == relayable(payload, MODEL)
