"""The Responses and Messages fronts convert plain text requests without llm-rosetta: for
every request of the shapes they take (and their near misses, which go to rosetta), the
Chat body is the very one rosetta's conversion and the mending give."""

from __future__ import annotations

import random
import warnings
from typing import Any

import orjson
import pytest

from bench.fronts_cost import body
from proxy.errors import BadRequestError
from proxy.fronts import conversion
from proxy.fronts.conversion import to_chat
from proxy.fronts.responses.handler import _chat_request
from proxy.fronts.responses.tools_plan import ToolsPlan

TEXTS: list[Any] = ["", "Hello", "two words", " spaced ", "ünï", 7, None]
NUMBERS: list[Any] = [0, 0.3, 1, 2.0, True, "0.5", None]
TOKENS: list[Any] = [1, 512, 0, 2.5, False, "5", None]
STREAMS: list[Any] = [True, False, None, 1, "yes"]


def _parts(rng: random.Random, kind: str) -> Any:
    choice = rng.random()
    if choice < 0.6:
        return rng.choice(TEXTS[:5])
    if choice < 0.7:
        return []
    parts: list[Any] = []
    for _ in range(rng.randint(1, 3)):
        part: dict[str, Any] = {"type": kind, "text": rng.choice(TEXTS)}
        roll = rng.random()
        if roll < 0.1:
            part["type"] = "image" if kind == "text" else "input_image"
        elif roll < 0.15:
            part["cache_control"] = {"type": "ephemeral"}
        elif roll < 0.2:
            part = {"type": kind}
        parts.append(part)
    return parts


def _sampling(rng: random.Random, body: dict[str, Any], tokens: str) -> None:
    for name, pool in (
        ("temperature", NUMBERS),
        ("top_p", NUMBERS),
        (tokens, TOKENS),
        ("stream", STREAMS),
    ):
        if rng.random() < 0.6:
            value = rng.choice(pool)
            if value is not None or rng.random() < 0.3:
                body[name] = value


def responses_body(rng: random.Random) -> dict[str, Any]:
    items: list[Any] = []
    for _ in range(rng.randint(0, 4)):
        role = rng.choice(["user", "user", "assistant", "system", "developer", "tool", 3])
        kind = "output_text" if role == "assistant" else "input_text"
        item: dict[str, Any] = {"type": "message", "role": role, "content": _parts(rng, kind)}
        roll = rng.random()
        if roll < 0.05:
            item["type"] = "function_call_output"
        elif roll < 0.1:
            item["id"] = "msg_1"
        items.append(item)
    body: dict[str, Any] = {"model": "m", "input": items}
    if rng.random() < 0.5:
        body["instructions"] = rng.choice(TEXTS)
    _sampling(rng, body, "max_output_tokens")
    for name, value in (
        ("parallel_tool_calls", False),
        ("tool_choice", "none"),
        ("text", {"format": {"type": "json_object"}}),
        ("reasoning", {"effort": "low"}),
    ):
        if rng.random() < 0.05:
            body[name] = rng.choice([value, None])
    return body


def messages_body(rng: random.Random) -> dict[str, Any]:
    turns: list[Any] = []
    for _ in range(rng.randint(1, 4)):
        role = rng.choice(["user", "user", "assistant", "system"])
        turn: dict[str, Any] = {"role": role, "content": _parts(rng, "text")}
        if rng.random() < 0.05:
            turn["name"] = "x"
        turns.append(turn)
    body: dict[str, Any] = {"model": "m", "messages": turns}
    if rng.random() < 0.5:
        body["system"] = _parts(rng, "text")
    if rng.random() < 0.3:
        body["stop_sequences"] = rng.choice([[], ["x"], ["a", "b"], "x", [1]])
    _sampling(rng, body, "max_tokens")
    if rng.random() < 0.05:
        body["top_k"] = 5
    return body


def _converted(body: dict[str, Any], source: conversion.Source) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what rosetta drops, it says as a warning
        try:
            return to_chat(body, source)
        except BadRequestError as exc:
            return ("400", exc.message)


def test_direct_messages_conversion_is_rosetta_s(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(29)
    taken = 0
    for _ in range(1500):
        body = messages_body(rng)
        fast = _converted(body, "anthropic")
        with monkeypatch.context() as patch:
            patch.setattr(conversion, "_direct_messages", lambda body: None)
            slow = _converted(body, "anthropic")
        assert fast == slow, body
        if isinstance(fast, dict):
            assert list(fast) == list(slow), body  # the same order on the wire too
        taken += conversion._direct_messages(body) is not None
    assert taken > 50  # enough of the sample was taken directly


def test_direct_responses_conversion_is_rosetta_s() -> None:
    # The front's request (`_chat_request`) converted by rosetta, against the body made at
    # once of the Responses body and its items, wherever that is made.
    rng = random.Random(29)
    taken = 0
    for _ in range(3000):
        body = responses_body(rng)
        items = body["input"]
        fast = conversion.direct_responses(body, items)
        if fast is None:
            continue
        taken += 1
        slow = _converted(_chat_request(body, items, ToolsPlan(), None), "openai_responses")  # type: ignore[arg-type]
        assert fast == slow, body
        assert list(fast) == list(slow), body  # the same order on the wire too
    assert taken > 100  # enough of the sample was taken directly


def test_a_responses_body_with_a_choice_or_settings_rosetta_reads_is_not_taken_directly() -> None:
    items = [{"type": "message", "role": "user", "content": "hi"}]
    plain = {"model": "m", "input": items}
    assert conversion.direct_responses(plain, items) == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
    }
    for name, value in (
        ("tool_choice", "auto"),
        ("text", {"format": {"type": "json_object"}}),
        ("reasoning", {"effort": "low"}),
        ("parallel_tool_calls", False),
    ):
        assert conversion.direct_responses({**plain, name: value}, items) is None, name
        assert conversion.direct_responses({**plain, name: None}, items) is not None, name


def test_bench_requests_are_taken_directly() -> None:
    assert conversion._direct_messages(orjson.loads(body("messages", True)))
    responses = orjson.loads(body("responses", True))
    items = [{"type": "message", "role": "user", "content": responses["input"]}]
    assert conversion.direct_responses(responses, items)
