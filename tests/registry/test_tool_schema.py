from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from registry import InvalidArgumentsError, RegistryError, Tag, Tool


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int = 0


@dataclass
class Box:
    width: float
    height: float


class Options(TypedDict):
    verbose: bool


class Opaque:
    pass


class Node(BaseModel):
    value: int
    children: list[Node] = []


def props(fn: Any) -> dict[str, Any]:
    return Tool.from_function(fn).parameters["properties"]


def test_scalars_required_and_defaults() -> None:
    def f(s: str, i: int, x: float, b: bool = False) -> None: ...

    schema = Tool.from_function(f).parameters
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["s", "i", "x"]
    assert schema["properties"] == {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "x": {"type": "number"},
        "b": {"type": "boolean", "default": False},
    }


def test_optional_with_default_is_not_required() -> None:
    def f(a: int | None = None, b: str | None = "x") -> None: ...

    schema = Tool.from_function(f).parameters
    assert "required" not in schema
    assert schema["properties"]["a"] == {
        "anyOf": [{"type": "integer"}, {"type": "null"}],
        "default": None,
    }


def test_optional_without_default_is_required() -> None:
    def f(a: int | None) -> None: ...

    assert Tool.from_function(f).parameters["required"] == ["a"]


def test_list_dict_tuple() -> None:
    def f(items: list[str], counts: dict[str, int], pair: tuple[int, str]) -> None: ...

    p = props(f)
    assert p["items"] == {"type": "array", "items": {"type": "string"}}
    assert p["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert p["pair"]["type"] == "array"
    assert p["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]


def test_enum_and_literal_are_inlined() -> None:
    def f(color: Color, unit: Literal["c", "f"] = "c") -> None: ...

    tool = Tool.from_function(f)
    assert "$defs" not in tool.parameters
    p = tool.parameters["properties"]
    assert p["color"] == {"type": "string", "enum": ["red", "blue"]}
    assert p["unit"]["enum"] == ["c", "f"]
    assert p["unit"]["default"] == "c"


def test_nested_models_dataclasses_typeddicts_are_inlined() -> None:
    def f(point: Point, box: Box, options: Options | None = None) -> None: ...

    tool = Tool.from_function(f)
    assert "$defs" not in tool.parameters
    assert "$ref" not in str(tool.parameters)
    p = tool.parameters["properties"]
    assert p["point"]["properties"]["x"] == {"type": "integer"}
    assert p["point"]["required"] == ["x"]
    assert p["box"]["properties"]["width"] == {"type": "number"}
    assert p["options"]["anyOf"][0]["properties"]["verbose"] == {"type": "boolean"}


def test_titles_are_dropped_but_a_property_named_title_is_kept() -> None:
    def f(title: str, point: Point) -> None: ...

    schema = Tool.from_function(f).parameters
    assert "title" not in schema
    assert schema["properties"]["title"] == {"type": "string"}
    assert "title" not in schema["properties"]["point"]


def test_recursive_model_keeps_defs() -> None:
    def f(tree: Node) -> None: ...

    schema = Tool.from_function(f).parameters
    assert "Node" in schema["$defs"]
    assert schema["properties"]["tree"] == {"$ref": "#/$defs/Node"}


def test_annotated_field_description_wins_over_docstring() -> None:
    def f(a: Annotated[str, Field(description="from Field")], b: int = 1) -> None:
        """Do it.

        Args:
            a: from docstring
            b: b from docstring
        """

    p = props(f)
    assert p["a"]["description"] == "from Field"
    assert p["b"]["description"] == "b from docstring"


def test_field_default_is_honoured() -> None:
    def f(n: int = Field(5, ge=1, description="count")) -> None: ...

    tool = Tool.from_function(f)
    assert tool.parameters["properties"]["n"] == {
        "type": "integer",
        "default": 5,
        "minimum": 1,
        "description": "count",
    }
    with pytest.raises(InvalidArgumentsError):
        tool.validate_arguments({"n": 0})


def test_google_docstring() -> None:
    def f(city: str, days: int = 1) -> None:
        """Get the forecast.

        Looks the city up first.

        Args:
            city: Name of the city.
            days: Number of days,
                at most 7.

        Returns:
            The forecast.
        """

    tool = Tool.from_function(f)
    assert tool.description == "Get the forecast.\n\nLooks the city up first."
    assert tool.parameters["properties"]["city"]["description"] == "Name of the city."
    assert tool.parameters["properties"]["days"]["description"] == "Number of days, at most 7."


def test_numpy_docstring() -> None:
    def f(city: str) -> None:
        """Get the forecast.

        Parameters
        ----------
        city : str
            Name of the city.

        Returns
        -------
        str
        """

    tool = Tool.from_function(f)
    assert tool.description == "Get the forecast."
    assert tool.parameters["properties"]["city"]["description"] == "Name of the city."


def test_rest_docstring() -> None:
    def f(city: str) -> None:
        """Get the forecast.

        :param city: Name of the city.
        :returns: the forecast
        """

    tool = Tool.from_function(f)
    assert tool.description == "Get the forecast."
    assert tool.parameters["properties"]["city"]["description"] == "Name of the city."


def test_no_docstring_gives_empty_description_and_explicit_description_wins() -> None:
    def f() -> None: ...

    assert Tool.from_function(f).description == ""
    assert Tool.from_function(f, description="Mine").description == "Mine"
    assert Tool.from_function(f).parameters == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


def test_varargs_and_kwargs_are_rejected() -> None:
    def f(*args: int) -> None: ...

    def g(**kwargs: int) -> None: ...

    with pytest.raises(RegistryError, match=r"\*args is not supported"):
        Tool.from_function(f)
    with pytest.raises(RegistryError, match=r"\*\*kwargs is not supported"):
        Tool.from_function(g)


def test_self_and_cls_are_skipped() -> None:
    class Weather:
        def forecast(self, city: str) -> str:
            return city

    def unbound(self: Any, city: str) -> None: ...

    assert list(props(Weather().forecast)) == ["city"]
    assert list(props(unbound)) == ["city"]


def test_unsupported_type_is_a_registry_error() -> None:
    def f(thing: Opaque) -> None: ...

    with pytest.raises(RegistryError, match="tool 'f': unsupported parameter type"):
        Tool.from_function(f)


def test_unresolvable_annotation_is_a_registry_error() -> None:
    class Local:
        pass

    def f(thing: Local) -> None: ...

    with pytest.raises(RegistryError, match="name 'Local' is not defined"):
        Tool.from_function(f)


def test_names_that_shadow_basemodel_attributes() -> None:
    def f(json: str, copy: int = 1, _hidden: bool = False) -> None: ...

    tool = Tool.from_function(f)
    assert list(tool.parameters["properties"]) == ["json", "copy", "_hidden"]
    kwargs = tool.validate_arguments('{"json": "x", "copy": "2", "_hidden": true}')
    assert kwargs == {"json": "x", "copy": 2, "_hidden": True}


def test_metadata_and_qualified_name() -> None:
    async def ping() -> str:
        return "pong"

    tool = Tool.from_function(
        ping,
        namespace="net",
        tags=[Tag.NETWORK, "custom"],
        timeout_s=2,
        defer=True,
        search_hint="latency",
        max_result_size=10,
        is_concurrency_safe=False,
        source="python:x.py",
    )
    assert tool.is_async
    assert tool.qualified_name == "net.ping"
    assert tool.metadata.tags == frozenset({"network", "custom"})
    assert tool.metadata.timeout_s == 2
    assert tool.metadata.defer
    assert not tool.metadata.is_concurrency_safe
    changed = tool.with_metadata(defer=False)
    assert not changed.metadata.defer
    assert tool.metadata.defer
    assert Tool.from_function(ping).qualified_name == "ping"


def test_invalid_metadata_is_rejected() -> None:
    def f() -> None: ...

    with pytest.raises(RegistryError):
        Tool.from_function(f, timeout_s=0)
    with pytest.raises(RegistryError):
        Tool.from_function(f, tags="read_only")


def test_validation_coerces_and_builds_nested_instances() -> None:
    def f(days: int, point: Point, box: Box, color: Color = Color.RED) -> None: ...

    kwargs = Tool.from_function(f).validate_arguments(
        {"days": "3", "point": {"x": 1}, "box": {"width": 1, "height": 2}, "color": "blue"}
    )
    assert kwargs == {
        "days": 3,
        "point": Point(x=1),
        "box": Box(1.0, 2.0),
        "color": Color.BLUE,
    }


def test_validation_errors_are_readable() -> None:
    def f(city: str, days: int = 1, point: Point | None = None) -> None: ...

    tool = Tool.from_function(f)
    with pytest.raises(InvalidArgumentsError) as missing:
        tool.validate_arguments("{}")
    assert missing.value.kind == "invalid_arguments"
    assert missing.value.message == "field 'city' is required"

    with pytest.raises(InvalidArgumentsError) as wrong:
        tool.validate_arguments({"city": "x", "days": "many", "point": {"x": "?"}})
    assert "field 'days': Input should be a valid integer" in wrong.value.message
    assert "field 'point.x'" in wrong.value.message

    with pytest.raises(InvalidArgumentsError) as extra:
        tool.validate_arguments({"city": "x", "town": "y"})
    assert extra.value.message == "unexpected field 'town' (expected: city, days, point)"


def test_argument_parsing() -> None:
    def f(a: int = 0) -> None: ...

    tool = Tool.from_function(f)
    assert tool.validate_arguments("") == {"a": 0}
    assert tool.validate_arguments('"{\\"a\\": 2}"') == {"a": 2}
    with pytest.raises(InvalidArgumentsError) as bad_json:
        tool.validate_arguments("{a: 1")
    assert bad_json.value.kind == "invalid_json"
    with pytest.raises(InvalidArgumentsError) as not_object:
        tool.validate_arguments("[1, 2]")
    assert not_object.value.kind == "invalid_arguments"
    assert "must be a JSON object, got an array" in not_object.value.message


@pytest.mark.parametrize("namespace", [None, "ns", "a.b"])
@pytest.mark.parametrize("name", ["t", "get_user", "x.y"])
def test_qualified_name_is_worked_out_once_and_again_for_a_copy(
    namespace: str | None, name: str
) -> None:
    import dataclasses

    tool = Tool(name=name, description="", parameters={"type": "object"}, namespace=namespace)
    expected = f"{namespace}.{name}" if namespace else name
    assert tool.qualified_name == expected
    # A copy under another name or namespace has its own; the field is neither shown nor
    # compared (it follows from the two that are).
    renamed = dataclasses.replace(tool, name="other", namespace=None)
    assert renamed.qualified_name == "other"
    moved = dataclasses.replace(tool, namespace="moved")
    assert moved.qualified_name == f"moved.{name}"
    assert "qualified_name" not in repr(tool)
    assert tool == dataclasses.replace(tool)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tool.qualified_name = "changed"  # type: ignore[misc]
