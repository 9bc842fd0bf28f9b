from __future__ import annotations

import itertools
from typing import Any

import pytest
from jsonschema.validators import validator_for

from registry.errors import InvalidArgumentsError
from registry.json_schemas import SchemaArguments, _quick_check

PLAIN: dict[str, Any] = {
    "type": "object",
    "title": "echoArguments",
    "properties": {
        "text": {"type": "string", "title": "Text"},
        "count": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "tags": {"type": ["string", "null"]},
    },
    "required": ["text"],
}
CLOSED = {**PLAIN, "additionalProperties": False}

VALUES: list[Any] = ["a", "", 1, 0, -3, 1.0, 2.5, float("nan"), True, False, None, [], {}, "fast"]
KEYS = ["text", "count", "ratio", "flag", "mode", "tags", "other"]


def argument_sets() -> list[dict[str, Any]]:
    sets: list[dict[str, Any]] = [{}]
    for key, value in itertools.product(KEYS, VALUES):
        sets.append({"text": "t", key: value})
        sets.append({key: value})
    return sets


@pytest.mark.parametrize("schema", [PLAIN, CLOSED], ids=["open", "closed"])
def test_the_quick_check_accepts_only_what_the_full_check_accepts(schema: dict[str, Any]) -> None:
    quick = _quick_check(schema)
    assert quick is not None
    full = validator_for(schema)(schema)
    accepted = 0
    for arguments in argument_sets():
        if quick(arguments):
            accepted += 1
            assert full.is_valid(arguments), arguments
    assert accepted > 20  # the common calls do take the quick way


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {}}},
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}},
        {"type": "object", "properties": {"a": {"type": "string", "format": "email"}}},
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
        {"$schema": "http://json-schema.org/draft-03/schema#", "type": "object"},
        {"type": "object", "properties": {"a": True}},
    ],
)
def test_any_other_schema_gets_the_full_check_only(schema: dict[str, Any]) -> None:
    assert _quick_check(schema) is None


def test_arguments_the_quick_check_is_unsure_of_get_the_full_checks_errors() -> None:
    check = SchemaArguments(CLOSED)
    check({"text": "a", "count": 3, "mode": "slow"})
    check({"text": "a", "ratio": 2.0, "count": None})
    with pytest.raises(InvalidArgumentsError) as refused:
        check({"text": 1, "other": 2, "mode": "medium"})
    message = refused.value.message
    assert "field 'text'" in message
    assert "'medium' is not one of" in message
    assert "Additional properties are not allowed" in message
    with pytest.raises(InvalidArgumentsError, match="'text' is a required property"):
        check({})
