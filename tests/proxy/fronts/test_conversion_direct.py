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
    if rng.random() < 0.05:
        body["parallel_tool_calls"] = False
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


@pytest.mark.parametrize(
    ("source", "make"),
    [("openai_responses", responses_body), ("anthropic", messages_body)],
    ids=["responses", "messages"],
)
def test_direct_conversion_is_rosetta_s(
    source: conversion.Source, make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(29)
    direct_name = "_direct_responses" if source == "openai_responses" else "_direct_messages"
    direct = getattr(conversion, direct_name)
    taken = 0
    for _ in range(1500):
        body = make(rng)
        fast = _converted(body, source)
        with monkeypatch.context() as patch:
            patch.setattr(conversion, direct_name, lambda body: None)
            slow = _converted(body, source)
        assert fast == slow, body
        if isinstance(fast, dict):
            assert list(fast) == list(slow), body  # the same order on the wire too
        taken += direct(body) is not None
    assert taken > 50  # enough of the sample was taken directly


def test_bench_requests_are_taken_directly() -> None:
    assert conversion._direct_messages(orjson.loads(body("messages", True)))
    responses = orjson.loads(body("responses", True))
    items = [{"type": "message", "role": "user", "content": responses.pop("input")}]
    assert conversion._direct_responses({**responses, "input": items})
