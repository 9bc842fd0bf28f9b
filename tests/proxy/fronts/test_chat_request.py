"""The Chat request check: the hand check of the usual shape never passes what the validator
(and the tool-call pairing) would refuse, and it does pass the usual requests."""

from __future__ import annotations

import contextlib
import copy
import json
import random
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from proxy.errors import BadRequestError
from proxy.fronts.chat import request
from proxy.fronts.chat.request import (
    _BODY,
    _SCALARS,
    BARE,
    PLAIN,
    ChatBody,
    _check_pairing,
    parse_body,
    plainly_valid,
)
from proxy.turn.bodies import client_history

CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
USUAL: list[dict[str, Any]] = [
    {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    {
        "model": "fake-model",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
        ],
        "temperature": 0.3,
        "max_tokens": 512,
    },
    {
        "model": "m",
        "messages": [{"role": "developer", "content": "x"}, {"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [{"type": "function", "function": {"name": "g", "parameters": {}}}],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "n": 1,
        "top_p": 1,
        "seed": 7,
        "user": "u",
        "stop": "\n",
        "response_format": {"type": "text"},
        "presence_penalty": -2,
        "frequency_penalty": 2.0,
        "logprobs": True,
        "top_logprobs": 20,
        "max_completion_tokens": 9,
        "vendor_field": {"anything": [1, 2]},
    },
    {
        "model": "m",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "42"},
            {"role": "assistant", "content": "done", "tool_calls": None},
            {"role": "function", "name": "f", "content": "old style"},
        ],
    },
]

ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -3,
    21,
    2**70,
    0.5,
    1.0,
    2.5,
    -2.0,
    "",
    "x",
    "auto",
    "none",
    "required",
    "tool",
    "user",
    "assistant",
    "call_1",
    [],
    ["a"],
    [1],
    [{}],
    [{"a": 1}],
    {},
    {"include_usage": True},
    {"include_usage": 1},
    {"type": "function", "function": {"name": "f"}},
]


def _validator_accepts(body: dict[str, Any]) -> bool:
    try:
        _BODY.validate_python(body)
        _check_pairing(body["messages"])
    except (ValidationError, BadRequestError):
        return False
    return True


@pytest.mark.parametrize("body", USUAL)
def test_the_usual_requests_pass_the_hand_check(body: dict[str, Any]) -> None:
    assert plainly_valid(body)
    assert _validator_accepts(body)
    assert parse_body(orjson.dumps(body))[0] == body


def _mutants(rng: random.Random) -> list[dict[str, Any]]:
    """Each usual body with one field (top-level, in a message, or in a tool call) set to an
    odd value or removed."""
    mutants: list[dict[str, Any]] = []
    for base in USUAL:
        keys = [*base, "stream", "tool_choice", "stream_options", "n", "stop", "model"]
        for key in keys:
            for value in ODD_VALUES:
                mutants.append({**copy.deepcopy(base), key: value})
            body = copy.deepcopy(base)
            body.pop(key, None)
            mutants.append(body)
        for index in range(len(base["messages"])):
            for field in ("role", "content", "tool_calls", "tool_call_id", "name"):
                for value in [*ODD_VALUES, "<removed>"]:
                    body = copy.deepcopy(base)
                    message = body["messages"][index]
                    if value == "<removed>":
                        message.pop(field, None)
                    else:
                        message[field] = value
                    mutants.append(body)
            body = copy.deepcopy(base)
            body["messages"][index] = rng.choice(ODD_VALUES)
            mutants.append(body)
    for value in ODD_VALUES:
        for field in ("id", "function", "name", "arguments"):
            body = copy.deepcopy(USUAL[3])
            call = body["messages"][1]["tool_calls"][0]
            (call["function"] if field in ("name", "arguments") else call)[field] = value
            mutants.append(body)
    return mutants


def test_the_hand_check_passes_nothing_the_validator_refuses() -> None:
    rng = random.Random(29)
    mutants = _mutants(rng)
    passed = 0
    for body in mutants:
        if plainly_valid(body):
            passed += 1
            assert _validator_accepts(body), body
    # Both ways: many of the mutants are still plain (an odd value the field takes).
    assert 100 < passed < len(mutants) - 100


def _outcome(raw: bytes) -> Any:
    """What `parse_body` makes of `raw`: the body, or the 400 it answers (status and body)."""
    try:
        return parse_body(raw)[0]
    except BadRequestError as exc:
        return (exc.status, exc.body())


def test_the_hand_check_changes_no_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every mutant comes back, or is refused with the same 400 (message and field), whether the
    # hand check passes it or the validator alone decides.
    raws = [json.dumps(body).encode() for body in _mutants(random.Random(29))]
    with_hand_check = [_outcome(raw) for raw in raws]
    monkeypatch.setattr(request, "plainly_valid", lambda body: False)
    assert [_outcome(raw) for raw in raws] == with_hand_check
    assert any(isinstance(o, dict) for o in with_hand_check)
    assert any(isinstance(o, tuple) for o in with_hand_check)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (
            {"model": "m", "messages": [{"role": "tool", "tool_call_id": "x", "content": "a"}]},
            "messages[0].tool_call_id",
        ),
        (
            {"model": "m", "messages": [{"role": "user", "content": "a"}], "temperature": True},
            "temperature",
        ),
        (
            {"model": "m", "messages": [{"role": "user", "content": "a"}], "max_tokens": 0},
            "max_tokens",
        ),
        ({"model": "", "messages": [{"role": "user", "content": "a"}]}, "model"),
    ],
)
def test_what_the_hand_check_leaves_is_refused_with_its_field(
    body: dict[str, Any], param: str
) -> None:
    assert not plainly_valid(body)
    with pytest.raises(BadRequestError) as caught:
        parse_body(orjson.dumps(body))
    assert caught.value.param == param


def test_the_hand_check_knows_every_field_the_validator_checks() -> None:
    # A field added to ChatBody must get its rule in `_SCALARS` (or be `model`/`messages`):
    # the hand check skips fields it does not know, so it would pass what the validator refuses.
    checked = set(ChatBody.__annotations__)
    assert checked == {"model", "messages", *_SCALARS}
    base = USUAL[0]
    for key in _SCALARS:
        for value in ODD_VALUES:
            body = {**copy.deepcopy(base), key: value}
            if plainly_valid(body):
                assert _validator_accepts(body), body


def test_bare_messages_are_those_the_loops_history_leaves_as_they_are() -> None:
    # `BARE` lets the loop skip `client_history`: it must hold only where it would give the
    # messages back as they are and find no tool round.
    user = {"role": "user", "content": "hi"}
    kinds = [
        *USUAL,
        *_mutants(random.Random(29)),
        {"model": "m", "messages": [{**user, "toolwire": {"x": 1}}]},
        {"model": "m", "messages": [user, {"role": "assistant", "content": "a", "tool_calls": []}]},
        {"model": "m", "messages": [user, {"role": "assistant", "content": "a", "toolwire": {}}]},
        {"model": "m", "messages": [{**user, "tool_calls": [CALL]}]},
    ]
    found = {0: 0, PLAIN: 0, BARE: 0}
    for body in kinds:
        plain = plainly_valid(body)
        found[plain] += 1
        if not plain:
            continue
        messages, tool_rounds = client_history(body["messages"])
        if plain == BARE:
            assert messages is body["messages"] and not tool_rounds, body
        with contextlib.suppress(TypeError):  # a number JSON cannot hold, as orjson writes it
            assert parse_body(orjson.dumps(body)) == (body, plain == BARE)
    assert plainly_valid(USUAL[0]) == BARE and plainly_valid(USUAL[3]) == PLAIN
    assert [plainly_valid(body) for body in kinds[-4:]] == [PLAIN] * 4
    assert all(found.values()), found
