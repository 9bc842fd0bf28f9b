"""Tools as typed Python signatures: what the model reads in `run_code`'s description."""

from __future__ import annotations

import ast

from proxy.codemode import python_name, signature, stubs, type_of


def test_schema_types_become_annotations() -> None:
    assert type_of({"type": "string"}) == "str"
    assert type_of({"type": "integer"}) == "int"
    assert type_of({"type": "number"}) == "float"
    assert type_of({"type": "boolean"}) == "bool"
    assert type_of({"type": "array", "items": {"type": "string"}}) == "list[str]"
    assert type_of({"type": "object", "properties": {}}) == "dict[str, Any]"
    assert type_of({"enum": ["c", "f"]}) == "Literal['c', 'f']"
    assert type_of({"type": ["integer", "null"]}) == "int | None"
    assert type_of({"anyOf": [{"type": "null"}, {"type": "string"}]}) == "str | None"
    assert type_of({"anyOf": [{"type": "string"}, {}]}) == "Any"
    assert type_of({}) == type_of(None) == "Any"


def test_a_signature_is_keyword_only_required_first_and_valid_python() -> None:
    schema = {
        "type": "object",
        "properties": {
            "days": {"type": "integer", "description": "how many days"},
            "city": {"type": "string", "description": "the city"},
        },
        "required": ["city"],
    }
    text = signature("get_weather", "Weather of a city.", schema)
    assert text.splitlines()[0] == (
        "async def get_weather(*, city: str, days: int | None = None) -> Any:"
    )
    assert "        city: the city" in text and "        days: how many days" in text
    tree = ast.parse(text)
    (function,) = tree.body
    assert isinstance(function, ast.AsyncFunctionDef)
    assert ast.get_docstring(function) is not None


def test_a_description_cannot_close_the_docstring() -> None:
    text = signature("f", 'Says """ and goes on.', {"type": "object", "properties": {}})
    ast.parse(text)
    assert text.count('"""') == 2


def test_names_become_unique_identifiers() -> None:
    assert python_name("get-weather") == "get_weather"
    assert python_name("class") == "_class"
    assert python_name("3d") == "_3d"
    made = stubs([("a-b", "", {}), ("a_b", "", {}), ("search_tools", "", {})])
    assert [s.function for s in made] == ["a_b", "a_b_2", "search_tools_2"]
    assert [s.tool for s in made] == ["a-b", "a_b", "search_tools"]
