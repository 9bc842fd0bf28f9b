"""The Messages request check: the hand check of the usual shape never passes what the
validator (and the tool_use/tool_result pairing) would refuse, and it does pass the usual
requests."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from pydantic import ValidationError

from proxy.errors import BadRequestError
from proxy.fronts.messages.request import (
    _BODY,
    _OWN,
    _SCALARS,
    MessagesBody,
    _check_pairing,
    parse_body,
    plainly_valid,
)

USE = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "42"}
USUAL: list[dict[str, Any]] = [
    {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]},
    {
        "model": "fake-model",
        "system": "be brief",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.3,
        "max_tokens": 512,
    },
    {
        "model": "m",
        "max_tokens": 9,
        "system": [{"type": "text", "text": "x"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "a"}, USE]},
            {"role": "user", "content": [RESULT, {"type": "text", "text": "go on"}]},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "thanks"},
        ],
        "stream": True,
        "tools": [
            {"name": "f", "input_schema": {"type": "object"}},
            {"type": "web_search_20250305", "name": "web_search"},
        ],
        "tool_choice": {"type": "auto"},
        "stop_sequences": ["\n"],
        "top_p": 1,
        "top_k": 0,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "metadata": {"user_id": "u"},
        "toolwire": {"tool_filter": ["*"]},
        "vendor_field": {"anything": [1, 2]},
    },
]

ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -3,
    2**70,
    0.5,
    1.0,
    2.5,
    -2.0,
    "",
    "x",
    "512",
    "user",
    "assistant",
    "tool_use",
    "tool_result",
    "toolu_1",
    [],
    ["a"],
    [1],
    [{}],
    [{"type": 1}],
    [{"type": "text", "text": "x"}],
    [RESULT],
    [USE],
    {},
    {"type": "auto"},
    {"name": "f"},
]


def _validator_accepts(body: dict[str, Any]) -> bool:
    try:
        _BODY.validate_python(body)
        _check_pairing(body["messages"])
    except (ValidationError, BadRequestError, TypeError):
        return False
    return True


@pytest.mark.parametrize("body", USUAL)
def test_the_usual_requests_pass_the_hand_check(body: dict[str, Any]) -> None:
    assert plainly_valid(body)
    assert _validator_accepts(body)
    assert parse_body(copy.deepcopy(body)) == body


def _changed(base: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A copy of `base` with the field at `path` set to `value` (or removed: `<removed>`)."""
    body = copy.deepcopy(base)
    target: Any = body
    for key in path[:-1]:
        target = target[key]
    if value == "<removed>":
        target.pop(path[-1], None)
    else:
        target[path[-1]] = value
    return body


def _paths(base: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Every field a mutant changes: top-level, in a message, a block or a tool."""
    paths: list[tuple[Any, ...]] = [(key,) for key in [*base, *_SCALARS, *_OWN]]
    for index, message in enumerate(base["messages"]):
        paths += [("messages", index, "role"), ("messages", index, "content")]
        content = message["content"]
        for at in range(len(content) if isinstance(content, list) else 0):
            paths += [("messages", index, "content", at, f) for f in ("type", "id", "tool_use_id")]
    for at in range(len(base.get("tools", ()))):
        paths += [("tools", at, "name"), ("tools", at, "input_schema")]
    return paths


def _mutants(rng: random.Random) -> list[dict[str, Any]]:
    """Each usual body with one field (top-level, in a message, a block or a tool) set to an
    odd value or removed, and with one message replaced by an odd value."""
    mutants: list[dict[str, Any]] = []
    for base in USUAL:
        for path in _paths(base):
            mutants += [_changed(base, path, value) for value in [*ODD_VALUES, "<removed>"]]
        for index in range(len(base["messages"])):
            mutants.append(_changed(base, ("messages", index), rng.choice(ODD_VALUES)))
    return mutants


def test_the_hand_check_passes_nothing_the_validator_refuses() -> None:
    mutants = _mutants(random.Random(29))
    passed = 0
    for body in mutants:
        if plainly_valid(body):
            passed += 1
            assert _validator_accepts(body), body
    # Both ways: many of the mutants are still plain (an odd value the field takes).
    assert 300 < passed < len(mutants) - 300


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": [RESULT]}],
            },
            "messages[0].content[0].tool_use_id",
        ),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "a"}],
                "temperature": 1.5,
            },
            "temperature",
        ),
        ({"model": "m", "max_tokens": 0, "messages": [{"role": "user", "content": "a"}]}, None),
        ({"model": "m", "messages": [{"role": "user", "content": "a"}]}, "max_tokens"),
        ({"model": "", "max_tokens": 5, "messages": [{"role": "user", "content": "a"}]}, "model"),
    ],
)
def test_what_the_hand_check_leaves_is_refused_with_its_field(
    body: dict[str, Any], param: str | None
) -> None:
    assert not plainly_valid(body)
    with pytest.raises(BadRequestError) as caught:
        parse_body(body)
    assert caught.value.param == (param or "max_tokens")


def test_the_hand_check_knows_every_field_the_validator_checks() -> None:
    # A field added to MessagesBody must get its rule: the hand check skips fields it does
    # not know, so it would pass what the validator refuses.
    assert set(MessagesBody.__annotations__) == {*_OWN, *_SCALARS}


def test_a_lax_value_still_goes_to_the_validator() -> None:
    # The validator's lax mode takes a number in a string; the hand check leaves it to it,
    # whose body (the number as a number) is the one returned.
    body = {"model": "m", "max_tokens": "512", "messages": [{"role": "user", "content": "a"}]}
    assert not plainly_valid(body)
    assert parse_body(body)["max_tokens"] == 512
