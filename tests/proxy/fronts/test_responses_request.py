"""A Responses body taken as sent (`plainly_valid`) is one the validator passes and gives back
with the very same values; anything else is left to the validator."""

from __future__ import annotations

import random
from typing import Any

import pytest

from proxy.errors import BadRequestError
from proxy.fronts.responses.request import _BODY, parse_body, plainly_valid

FIELDS = (
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "max_output_tokens",
    "temperature",
    "top_p",
    "text",
    "reasoning",
    "metadata",
    "store",
    "stream",
    "background",
    "user",
    "previous_response_id",
    "toolwire",
    "vendor_field",
)
VALUES: tuple[Any, ...] = (
    None,
    "",
    "fake-model",
    "auto",
    "required",
    "bogus",
    0,
    1,
    3,
    512,
    -1,
    0.0,
    0.3,
    1.0,
    1.5,
    2.0,
    2.5,
    -0.5,
    True,
    False,
    {},
    {"a": "b"},
    {"a": 1},
    {"format": {"type": "text"}},
    [],
    [{"type": "function", "name": "f"}],
    [{"role": "user", "content": "hi"}],
)
PLAIN = {
    "model": "fake-model",
    "instructions": "Be brief.",
    "input": "hi",
    "temperature": 0.3,
    "max_output_tokens": 512,
}


def bodies() -> list[dict[str, Any]]:
    """A plain body, each of its one-field mutants (every value in every field), and random
    bodies of a few fields (half of them with a model and an input)."""
    made = [dict(PLAIN)]
    for name in FIELDS:
        for value in VALUES:
            made.append({**PLAIN, name: value})
        made.append({k: v for k, v in PLAIN.items() if k != name})
    rng = random.Random(29)
    for _ in range(3000):
        body = {"model": "fake-model", "input": "hi"} if rng.random() < 0.5 else {}
        for name in rng.sample(FIELDS, rng.randint(1, 6)):
            body[name] = rng.choice(VALUES)
        made.append(body)
    return made


def typed(body: dict[str, Any]) -> dict[str, Any]:
    """Each field's value with its class (1 and 1.0 compare equal, but serialize apart)."""
    return {key: (value.__class__, value) for key, value in body.items()}


def test_a_body_taken_as_sent_is_the_one_the_validator_gives_back() -> None:
    taken = 0
    for body in bodies():
        if not plainly_valid(body):
            continue
        taken += 1
        validated = _BODY.validate_python(body)  # raises if the check took an invalid body
        assert typed(validated) == typed(body), body
        for key, value in body.items():  # nothing the validator would have copied
            if isinstance(value, list | dict):
                assert validated[key] is value, (key, body)
    assert taken > 200  # the usual bodies are taken: the check is not vacuous


@pytest.mark.parametrize(
    "body",
    [
        {**PLAIN, "temperature": 1},  # the validator makes a float of it
        {**PLAIN, "top_p": 1},
        {**PLAIN, "tools": []},  # the validator copies lists and objects
        {**PLAIN, "metadata": {"a": "b"}},
        {**PLAIN, "tool_choice": {"type": "function", "name": "f"}},
    ],
)
def test_a_valid_body_the_validator_would_change_is_left_to_it(body: dict[str, Any]) -> None:
    assert not plainly_valid(body)
    assert parse_body(body) == _BODY.validate_python(body)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({**PLAIN, "model": ""}, "model"),
        ({**PLAIN, "temperature": 2.5}, "temperature"),
        ({**PLAIN, "max_output_tokens": 0}, "max_output_tokens"),
        ({**PLAIN, "store": "maybe"}, "store"),
        ({**PLAIN, "tool_choice": "bogus"}, "tool_choice"),
        ({k: v for k, v in PLAIN.items() if k != "input"}, "input"),
    ],
)
def test_an_invalid_body_is_still_refused_by_the_validator(
    body: dict[str, Any], param: str
) -> None:
    assert not plainly_valid(body)
    with pytest.raises(BadRequestError) as refused:
        parse_body(body)
    assert refused.value.param == param
