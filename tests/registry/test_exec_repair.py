from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from registry import Executor, Tool, ToolCall, ToolRegistry
from registry.repair import repair_call, resolve_name

SCHEMA = {
    "type": "object",
    "properties": {
        "city_name": {"type": "string"},
        "days": {"type": "integer"},
        "ratio": {"type": "number"},
        "metric": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "integer"}},
        "options": {"type": "object", "properties": {"max_results": {"type": "integer"}}},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    },
}


@pytest.fixture
def executor() -> Iterator[Executor]:
    with Executor(default_timeout_s=5) as ex:
        yield ex


def forecast(city: str, days: int, cities: list[str], metric: bool = True) -> str:
    return f"{city}:{days}:{','.join(cities)}:{metric}"


def test_each_repair_is_applied_and_named(caplog: pytest.LogCaptureFixture) -> None:
    raw = (
        '{"City-Name": "Paris", "days": "3", "ratio": "0.5", "metric": "TRUE",'
        ' "tags": "[1, \\"2\\"]", "options": "{\\"maxResults\\": \\"4\\"}", "limit": "7"}'
    )
    with caplog.at_level(logging.INFO, logger="toolwire.repair"):
        arguments, repairs = repair_call(raw, SCHEMA, tool="weather")
    assert arguments == {
        "city_name": "Paris",
        "days": 3,
        "ratio": 0.5,
        "metric": True,
        "tags": [1, 2],
        "options": {"max_results": 4},
        "limit": 7,
    }
    assert sorted({r.kind for r in repairs}) == [
        "boolean_string",
        "json_string",
        "key_name",
        "number_string",
    ]
    assert "key_name at City-Name: key 'City-Name' taken as 'city_name'" in [
        str(r) for r in repairs
    ]
    assert len([r for r in caplog.records if "repaired a call to weather" in r.message]) == len(
        repairs
    )


def test_strict_mode_repairs_nothing() -> None:
    arguments, repairs = repair_call('{"Days": "3"}', SCHEMA, strict=True)
    assert (arguments, repairs) == ({"Days": "3"}, [])


def test_ambiguous_or_clashing_keys_and_non_numbers_are_left_alone() -> None:
    schema = {"type": "object", "properties": {"a_b": {"type": "integer"}, "ab": {}}}
    arguments, repairs = repair_call({"A-B": "x", "days": "three"}, schema)
    assert arguments == {"A-B": "x", "days": "three"}
    assert repairs == []
    taken, _ = repair_call({"city_name": "a", "City_Name": "b"}, SCHEMA)
    assert taken == {"city_name": "a", "City_Name": "b"}


def test_strings_stay_strings_where_the_schema_wants_strings() -> None:
    arguments, repairs = repair_call({"city_name": "42"}, SCHEMA)
    assert arguments == {"city_name": "42"}
    assert repairs == []


async def test_the_executor_repairs_before_validating(executor: Executor) -> None:
    tool = Tool.from_function(forecast)
    call = ToolCall("c1", "forecast", {"City": "Oslo", "DAYS": 2, "cities": '["a", "b"]'})
    result = await executor.execute(tool, call)
    assert result.content == "Oslo:2:a,b:True"
    record = executor.log.records()[-1]
    assert any("key_name" in r for r in record.repairs)
    assert any("json_string" in r for r in record.repairs)


async def test_strict_executor_refuses_what_it_would_repair() -> None:
    tool = Tool.from_function(forecast)
    with Executor(strict_arguments=True) as executor:
        keys = await executor.execute(
            tool, ToolCall("c1", "f", {"City": "Oslo", "days": 2, "cities": []})
        )
        number = await executor.execute(
            tool, ToolCall("c2", "f", {"city": "Oslo", "days": "2", "cities": []})
        )
    assert keys.error_kind == "invalid_arguments"
    assert "field 'city' is required" in keys.content
    assert number.error_kind == "invalid_arguments"
    assert "days" in number.content


async def test_a_call_still_invalid_after_repair_gets_the_validation_errors(
    executor: Executor,
) -> None:
    tool = Tool.from_function(forecast)
    result = await executor.execute(tool, ToolCall("c1", "f", {"city": "Oslo", "days": "soon"}))
    assert result.error_kind == "invalid_arguments"
    assert "field 'days'" in result.content
    assert "field 'cities' is required" in result.content


def test_resolve_name_exact_first_then_folded() -> None:
    registry = ToolRegistry()
    registry.register(forecast, namespace="demo")
    registry.register(forecast, name="Forecast")
    assert resolve_name(registry, "demo_forecast") is not None
    exact = resolve_name(registry, "Forecast")
    assert exact is not None and exact.name == "Forecast" and exact.repair is None
    folded = resolve_name(registry, "Demo-Forecast")
    assert folded is not None and folded.name == "demo_forecast"
    assert folded.repair is not None and folded.repair.kind == "tool_name"
    dotted = resolve_name(registry, "demo.forecast")
    assert dotted is not None and dotted.name == "demo_forecast"
    assert resolve_name(registry, "weather") is None


def test_resolve_name_among_client_tool_names() -> None:
    names = ["get_weather", "getTime", "get-time"]
    match = resolve_name(names, "GET_WEATHER")
    assert match is not None and match.name == "get_weather"
    assert resolve_name(names, "get_time") is None
