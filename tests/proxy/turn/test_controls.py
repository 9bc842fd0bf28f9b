"""Per-request controls in memory: the `toolwire` field and `X-Toolwire-*` headers."""

from __future__ import annotations

from typing import Any

import pytest

from policies import ToolFilter
from proxy.errors import BadRequestError
from proxy.turn.controls import DEFAULT_CONTROLS, Controls, parse_controls
from registry import ToolRegistry


def ping() -> str:
    """Answer pong."""
    return "pong"


HEADERS = ("x-toolwire-tags", "x-toolwire-exclude-tags", "x-toolwire-namespaces")


def test_no_field_and_no_control_header_is_the_default() -> None:
    assert parse_controls(None, {}) is DEFAULT_CONTROLS
    assert parse_controls(None, {"x-request-id": "r1", "authorization": "Bearer k"}) is (
        DEFAULT_CONTROLS
    )
    assert Controls(tool_filter=ToolFilter()) == DEFAULT_CONTROLS
    assert DEFAULT_CONTROLS.auto_execute and not DEFAULT_CONTROLS.stream_tool_events
    assert DEFAULT_CONTROLS.max_iterations is None


def test_an_empty_field_changes_nothing() -> None:
    assert parse_controls({}, {}) == DEFAULT_CONTROLS


def test_every_body_field_is_read() -> None:
    raw = {
        "tags": ["read_only"],
        "exclude_tags": ["network"],
        "namespaces": ["t"],
        "tools": ["t.add", "t_get_weather"],
        "auto_execute": False,
        "max_iterations": 3,
        "stream_tool_events": True,
    }
    assert parse_controls(raw, {}) == Controls(
        tool_filter=ToolFilter(
            tags=frozenset({"read_only"}),
            exclude_tags=frozenset({"network"}),
            namespaces=frozenset({"t"}),
            names=frozenset({"t.add", "t_get_weather"}),
        ),
        auto_execute=False,
        max_iterations=3,
        stream_tool_events=True,
    )


def test_empty_lists_in_the_body_select_nothing_rather_than_everything() -> None:
    tools = ToolRegistry()
    tools.register(ping, namespace="t", tags=["read_only"])
    assert parse_controls({"tags": ["read_only"]}, {}).tool_filter.select(tools) != []
    for field in ("tags", "namespaces", "tools"):
        assert parse_controls({field: []}, {}).tool_filter.select(tools) == []


def test_headers_alone_are_read_comma_separated_and_trimmed() -> None:
    headers = {
        "x-toolwire-tags": "read_only, network ,,",
        "x-toolwire-exclude-tags": " destructive",
        "x-toolwire-namespaces": "t,fs",
    }
    controls = parse_controls(None, headers)
    assert controls.tool_filter == ToolFilter(
        tags=frozenset({"read_only", "network"}),
        exclude_tags=frozenset({"destructive"}),
        namespaces=frozenset({"t", "fs"}),
    )
    assert controls.auto_execute and controls.max_iterations is None
    assert not controls.stream_tool_events


@pytest.mark.parametrize("header", HEADERS)
def test_any_one_control_header_is_enough(header: str) -> None:
    controls = parse_controls(None, {header: "x"})
    assert controls != DEFAULT_CONTROLS
    assert "x" in {
        *(controls.tool_filter.tags or ()),
        *controls.tool_filter.exclude_tags,
        *(controls.tool_filter.namespaces or ()),
    }


def test_body_and_headers_narrow_each_other() -> None:
    raw = {"tags": ["a", "b"], "exclude_tags": ["x"], "namespaces": ["n1", "n2"], "tools": ["t"]}
    headers = {
        "x-toolwire-tags": "b,c",
        "x-toolwire-exclude-tags": "y",
        "x-toolwire-namespaces": "n2",
    }
    assert parse_controls(raw, headers).tool_filter == ToolFilter(
        tags=frozenset({"b"}),
        exclude_tags=frozenset({"x", "y"}),
        namespaces=frozenset({"n2"}),
        names=frozenset({"t"}),
    )


def test_headers_cannot_widen_the_body() -> None:
    controls = parse_controls({"tags": ["a"]}, {"x-toolwire-tags": "a,b,c"})
    assert controls.tool_filter.tags == frozenset({"a"})


def test_a_header_fills_what_the_body_leaves_open() -> None:
    controls = parse_controls({"exclude_tags": ["x"]}, {"x-toolwire-tags": "a"})
    assert controls.tool_filter == ToolFilter(tags=frozenset({"a"}), exclude_tags=frozenset({"x"}))


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        ({"bogus": 1}, "toolwire.bogus"),
        ({"tags": "read_only"}, "toolwire.tags"),
        ({"tags": ["ok", 3]}, "toolwire.tags.1"),
        ({"max_iterations": 0}, "toolwire.max_iterations"),
        ({"max_iterations": "many"}, "toolwire.max_iterations"),
        ({"auto_execute": "perhaps"}, "toolwire.auto_execute"),
    ],
)
def test_a_bad_field_is_a_400_naming_its_path(raw: dict[str, Any], param: str) -> None:
    with pytest.raises(BadRequestError) as caught:
        parse_controls(raw, {})
    assert caught.value.status == 400
    assert caught.value.param == param
    assert caught.value.message.startswith(f"{param}: ")


def test_a_bad_field_is_refused_even_with_headers() -> None:
    with pytest.raises(BadRequestError) as caught:
        parse_controls({"bogus": 1}, {"x-toolwire-tags": "a"})
    assert caught.value.param == "toolwire.bogus"


def test_a_field_that_is_not_an_object_is_a_400() -> None:
    with pytest.raises(BadRequestError) as caught:
        parse_controls(["tags"], {})
    assert caught.value.status == 400
    assert (caught.value.param or "").startswith("toolwire")
