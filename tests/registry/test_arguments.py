"""Argument parsing and validation in memory: what the model is told when its call is wrong."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field, model_validator

from registry.arguments import bind_arguments, parse_arguments
from registry.errors import InvalidArgumentsError


class Trip(BaseModel):
    model_config = ConfigDict(extra="forbid")

    city: str
    days: int = 1


class Stop(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str


class Route(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    stops: list[Stop]
    from_: str = Field(alias="from")


class Window(BaseModel):
    start: int
    end: int

    @model_validator(mode="after")
    def _ordered(self) -> Window:
        if self.end < self.start:
            raise ValueError("end comes before start")
        return self


class Nothing(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Many(BaseModel):
    a: int
    b: int
    c: int
    d: int
    e: int
    f: int
    g: int
    h: int
    i: int


def explain(model: type[BaseModel], arguments: dict[str, object], **options: bool) -> str:
    with pytest.raises(InvalidArgumentsError) as caught:
        bind_arguments(model, arguments, **options)
    assert caught.value.kind == "invalid_arguments"
    return str(caught.value)


@pytest.mark.parametrize("raw", ["", "   ", "\n"])
def test_empty_arguments_are_an_empty_object(raw: str) -> None:
    assert parse_arguments(raw) == {}


def test_objects_text_and_double_encoded_text_are_parsed() -> None:
    assert parse_arguments({"city": "Oslo"}) == {"city": "Oslo"}
    assert parse_arguments('{"city": "Oslo"}') == {"city": "Oslo"}
    assert parse_arguments('"{\\"city\\": \\"Oslo\\"}"') == {"city": "Oslo"}


@pytest.mark.parametrize(
    ("raw", "got"),
    [
        ("[1, 2]", "an array"),
        ('"Oslo"', "a string"),
        ("true", "a boolean"),
        ("null", "null"),
        ("4.5", "a number"),
    ],
)
def test_a_value_that_is_not_an_object_is_named(raw: str, got: str) -> None:
    with pytest.raises(InvalidArgumentsError) as caught:
        parse_arguments(raw)
    assert caught.value.kind == "invalid_arguments"
    assert str(caught.value) == f"arguments must be a JSON object, got {got}"


def test_bad_json_is_invalid_json() -> None:
    with pytest.raises(InvalidArgumentsError) as caught:
        parse_arguments('{"city": ')
    assert caught.value.kind == "invalid_json"
    assert str(caught.value).startswith("arguments are not valid JSON")


def test_an_unexpected_field_lists_the_expected_ones() -> None:
    message = explain(Trip, {"city": "Oslo", "weeks": 2})
    assert message == "unexpected field 'weeks' (expected: city, days)"


def test_an_unexpected_field_names_aliases_and_says_when_nothing_is_expected() -> None:
    assert explain(Route, {"from": "A", "stops": [], "to": "B"}) == (
        "unexpected field 'to' (expected: stops, from)"
    )
    assert explain(Nothing, {"x": 1}) == "unexpected field 'x' (expected: no arguments)"


def test_a_nested_unexpected_field_gets_its_path_only() -> None:
    message = explain(Route, {"from": "A", "stops": [{"name": "x", "size": 2}]})
    assert message == "unexpected field 'stops[0].size'"


def test_missing_and_wrong_fields_are_named_with_their_paths() -> None:
    assert explain(Trip, {}) == "field 'city' is required"
    message = explain(Route, {"from": "A", "stops": [{"name": 3}]})
    assert message.startswith("field 'stops[0].name': ")


def test_an_error_about_the_whole_object_is_passed_on() -> None:
    assert explain(Window, {"start": 5, "end": 1}) == "Value error, end comes before start"


def test_at_most_eight_errors_are_listed() -> None:
    nine = explain(Many, {})
    assert nine.count("is required") == 8 and nine.endswith("; and 1 more errors")
    eight = explain(Many, {"i": 1})
    assert eight.count("is required") == 8 and "more errors" not in eight


def test_strict_binding_refuses_what_json_cannot_hold() -> None:
    message = explain(Trip, {"city": "Oslo", "days": 2**70}, strict=True)
    assert message.startswith("arguments are not JSON")


def test_binding_returns_the_functions_keyword_arguments() -> None:
    assert bind_arguments(Trip, {"city": "Oslo"}) == {"city": "Oslo", "days": 1}
    assert bind_arguments(Route, {"from": "A", "stops": []}) == {"stops": [], "from": "A"}
    assert bind_arguments(None, {"anything": 1}) == {"anything": 1}
    assert bind_arguments(Trip, {"city": "Oslo", "days": "2"}) == {"city": "Oslo", "days": 2}
    assert "days" in explain(Trip, {"city": "Oslo", "days": "2"}, strict=True)
