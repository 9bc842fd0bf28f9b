"""Argument values converted by the tool's schema (values.py), alone and through every format
that carries values as text, with the peers' facts (vLLM 0.33 `tests/tool_parsers/`:
deepseekv32, qwen3coder, glm4_moe, minimax_m2), whole and in deltas of 1 to 7 characters."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy.upstreams.emulation import Call, Text, ToolSpecs, get_format, run
from proxy.upstreams.emulation.repairs import Repair
from proxy.upstreams.emulation.values import convert, schema_types, typed_arguments

D = "\uff5cDSML\uff5c"
NULLABLE = {"anyOf": [{"type": "string"}, {"type": "null"}]}


def _typed(value: Any) -> str:
    """JSON that tells 5 from 5.0 and True from 1."""
    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize(
    ("text", "schema", "expected"),
    [
        ("42", {"type": "integer"}, 42),
        ("3.14", {"type": "float"}, 3.14),
        ("3.14", {"type": "number"}, 3.14),
        ("5.0", {"type": "number"}, 5),
        ("3.0", {"type": "number"}, 3),
        ("-1.5e-3", {"type": "number"}, -0.0015),
        ("true", {"type": "boolean"}, True),
        ("False", {"type": "boolean"}, False),
        ("hello world", {"type": "string"}, "hello world"),
        ('{"key": "value"}', {"type": "object"}, {"key": "value"}),
        ('["a", "b", "c"]', {"anyOf": [{"type": "array"}, {"type": "null"}]}, ["a", "b", "c"]),
        ('{"key": "value"}', {"anyOf": [{"type": "object"}, {"type": "null"}]}, {"key": "value"}),
        ("5", {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5}, 5),
        ("hello", NULLABLE, "hello"),
        ("null", NULLABLE, None),
        ("42", {"type": ["integer", "null"]}, 42),
        ("null", {"type": ["integer", "null"]}, None),
        (
            "some text",
            {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
            "some text",
        ),
        ("none", {"type": "string", "enum": ["dark", "light", "none"]}, "none"),
        ("none", {"type": "string"}, "none"),
        ("null", {"type": "string"}, "null"),
        ("007", {"type": "string"}, "007"),
        ("abc", {"type": "integer"}, "abc"),
        ("1_000", {"type": "integer"}, "1_000"),
        ("NaN", {"type": "number"}, "NaN"),
        ("2", {"enum": [1, 2, 3]}, 2),
        ("{'a': 1}", {"type": "object"}, {"a": 1}),
        ("[1, 2]", {}, [1, 2]),
        ("plain", {}, "plain"),
        (
            "wait",
            {"oneOf": [{"type": "array", "items": {"type": "object"}}, {"type": "null"}]},
            "wait",
        ),
    ],
)
def test_text_becomes_the_schemas_type_or_stays_text(text: str, schema: Any, expected: Any) -> None:
    assert _typed(convert(text, schema)) == _typed(expected)


@pytest.mark.parametrize(
    ("value", "schema", "expected"),
    [
        (3.0, {"type": "number"}, 3),
        (3.5, {"type": "number"}, 3.5),
        (2.0, {"type": "integer"}, 2),
        (None, {"type": "string"}, "null"),
        (None, {"type": ["null", "string"]}, None),
        (42, {"type": "string"}, "42"),
        (True, {"type": "boolean"}, True),
        ("42", {"type": "integer"}, 42),
        ({"k": 1}, {"type": "object"}, {"k": 1}),
        (7, {}, 7),
    ],
)
def test_typed_values_fit_the_schema(value: Any, schema: Any, expected: Any) -> None:
    assert _typed(convert(value, schema)) == _typed(expected)


def test_schema_types_read_type_lists_compositions_aliases_and_enums() -> None:
    assert schema_types({"type": ["integer", "null"]}) == {"integer", "null"}
    assert schema_types({"anyOf": [{"type": "object"}, {"oneOf": [{"type": "null"}]}]}) == {
        "object",
        "null",
    }
    assert schema_types({"type": "float"}) == {"number"}
    assert schema_types({"enum": ["a", 1]}) == {"string", "integer"}
    assert schema_types("nonsense") == frozenset()


def test_python_literals_are_a_lenient_repair_only() -> None:
    repairs: list[Repair] = []
    assert convert("{'a': True}", {"type": "object"}, repairs=repairs) == {"a": True}
    assert repairs == [Repair.PY_LITERAL]
    assert convert("{'a': True}", {"type": "object"}, lenient=False) == "{'a': True}"


def test_a_lone_wrapper_is_unwrapped_when_it_holds_the_tools_own_parameters() -> None:
    params = {
        "type": "object",
        "properties": {"location": {"type": "string"}, "n": {"type": "integer"}},
    }
    repairs: list[Repair] = []
    raw = {"arguments": '{"location": "Beijing", "n": "2"}'}
    assert typed_arguments(raw, params, True, repairs) == {"location": "Beijing", "n": 2}
    assert repairs == [Repair.WRAPPER_UNWRAPPED]
    assert typed_arguments({"input": '{"location": "Beijing"}'}, params, True, []) == {
        "location": "Beijing"
    }
    # Strict, another key inside, a second parameter, or a tool with its own `input`: kept.
    assert typed_arguments(raw, params, False, []) == {
        "arguments": {"location": "Beijing", "n": "2"}
    }
    assert typed_arguments({"input": '{"city": "x"}'}, params, True, []) == {"input": {"city": "x"}}
    two = {"input": '{"location": "x"}', "n": "1"}
    assert typed_arguments(two, params, True, []) == {"input": {"location": "x"}, "n": 1}
    own = {"type": "object", "properties": {"input": {"type": "string"}}}
    assert typed_arguments({"input": '{"input": "x"}'}, own, True, []) == {
        "input": '{"input": "x"}'
    }


def _tool(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


TOOLS = [
    _tool(
        "test_types",
        {
            "int_param": {"type": "integer"},
            "float_param": {"type": "float"},
            "bool_param": {"type": "boolean"},
            "str_param": {"type": "string"},
            "obj_param": {"type": "object"},
        },
    ),
    _tool(
        "test_anyof",
        {
            "anyof_int": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
            "anyof_str": NULLABLE,
            "anyof_array": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]
            },
            "anyof_obj": {"anyOf": [{"type": "object"}, {"type": "null"}]},
            "type_as_array": {"type": ["integer", "null"]},
            "multi_non_null": {
                "anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]
            },
        },
    ),
    _tool(
        "calculate",
        {
            "operation": {"type": "string"},
            "a": {"type": "number"},
            "b": {"type": "number"},
            "enabled": {"type": "boolean"},
        },
    ),
    _tool("toggle", {"enabled": {"type": "boolean"}, "count": {"type": "integer"}}),
    _tool("score", {"value": {"type": "integer"}}),
    _tool(
        "set_timer",
        {
            "wait": {
                "anyOf": [
                    {"type": "object", "properties": {"type": {"const": "until"}}},
                    {"type": "object", "properties": {"minutes": {"type": "number"}}},
                ]
            },
            "patches": {
                "oneOf": [{"type": "array", "items": {"type": "object"}}, {"type": "null"}]
            },
        },
    ),
    _tool("set_wait", {"wait": {"anyOf": [{"type": "object"}, {"type": "null"}]}}),
    _tool("get_weather", {"location": {"type": "string"}}),
    _tool("update", {"tags": {"type": "array"}, "meta": {"type": "object"}}),
    _tool("measure", {"ratio": {"type": "number"}, "whole": {"type": "number"}}),
    _tool(
        "set_val", {"count": {"type": ["integer", "null"]}, "label": {"type": ["string", "null"]}}
    ),
    _tool("clear", {"value": {"type": ["integer", "null"]}}),
    _tool("echo", {"text": {"type": "string"}}),
    _tool(
        "coerce",
        {
            "union_value": {"type": ["null", "string"]},
            "bad_int": {"type": "integer"},
            "nullable_string": {"type": ["null", "string"]},
            "null_string": {"type": "string"},
            "whole_number": {"type": "number"},
        },
    ),
    _tool("set_theme", {"theme": {"type": "string", "enum": ["dark", "light", "none"]}}),
    _tool("update_profile", {"nickname": NULLABLE}),
]


def _xml(name: str, params: dict[str, str]) -> str:
    inner = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{inner}</function>\n</tool_call>"


def _glm(name: str, params: dict[str, str]) -> str:
    pairs = "".join(
        f"<arg_key>{k}</arg_key><arg_value>{v}</arg_value>\n" for k, v in params.items()
    )
    return f"<tool_call>{name}\n{pairs}</tool_call>"


def _dsml(name: str, params: list[tuple[str, str, str]]) -> str:
    lines = "".join(
        f'<{D}parameter name="{k}" string="{flag}">{v}</{D}parameter>\n' for k, flag, v in params
    )
    return (
        f'<{D}function_calls>\n<{D}invoke name="{name}">\n{lines}</{D}invoke>\n</{D}function_calls>'
    )


OBJ = '{"key": "value"}'
WAIT = '{"type":"for","minutes":2880}'
PATCHES = '[{"op":"replace","path":"/schedule","value":"quiet"}]'
CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    # (id, format, model output, expected arguments)
    (
        "qwen3coder_type_conversion",
        "xml",
        _xml(
            "test_types",
            {
                "int_param": "42",
                "float_param": "3.14",
                "bool_param": "true",
                "str_param": "hello world",
                "obj_param": OBJ,
            },
        ),
        {
            "int_param": 42,
            "float_param": 3.14,
            "bool_param": True,
            "str_param": "hello world",
            "obj_param": {"key": "value"},
        },
    ),
    (
        "qwen3coder_anyof_type_conversion",
        "xml",
        _xml(
            "test_anyof",
            {
                "anyof_int": "5",
                "anyof_str": "hello",
                "anyof_array": '["a", "b", "c"]',
                "anyof_obj": OBJ,
                "type_as_array": "42",
                "multi_non_null": "some text",
            },
        ),
        {
            "anyof_int": 5,
            "anyof_str": "hello",
            "anyof_array": ["a", "b", "c"],
            "anyof_obj": {"key": "value"},
            "type_as_array": 42,
            "multi_non_null": "some text",
        },
    ),
    (
        "qwen3coder_anyof_not_double_encoded",
        "xml",
        _xml("set_wait", {"wait": OBJ}),
        {"wait": {"key": "value"}},
    ),
    (
        "minimax_m2_nullable_and_none_strings",
        "xml",
        _xml("update_profile", {"nickname": "null"}),
        {"nickname": None},
    ),
    ("minimax_m2_none_in_enum", "xml", _xml("set_theme", {"theme": "none"}), {"theme": "none"}),
    (
        "glm45_coerces_schema_types",
        "glm",
        _glm("calculate", {"operation": "add", "a": "42", "b": "3.14", "enabled": "true"}),
        {"operation": "add", "a": 42, "b": 3.14, "enabled": True},
    ),
    (
        "glm_float_whole_number",
        "glm",
        _glm("measure", {"ratio": "0.5", "whole": "5.0"}),
        {"ratio": 0.5, "whole": 5},
    ),
    (
        "glm_arguments_wrapper",
        "glm",
        _glm("get_weather", {"arguments": '{"location": "Beijing"}'}),
        {"location": "Beijing"},
    ),
    (
        "dsml_type_conversion",
        "deepseek-v3.2",
        _dsml("toggle", [("enabled", "false", "true"), ("count", "false", "42")]),
        {"enabled": True, "count": 42},
    ),
    (
        "dsml_string_true_coerced",
        "deepseek-v3.2",
        _dsml("score", [("value", "true", "42")]),
        {"value": 42},
    ),
    (
        "dsml_string_false_converted",
        "deepseek-v3.2",
        _dsml("score", [("value", "false", "42")]),
        {"value": 42},
    ),
    (
        "dsml_composed_schema_object_and_array",
        "deepseek-v3.2",
        _dsml("set_timer", [("wait", "false", WAIT), ("patches", "false", PATCHES)]),
        {"wait": json.loads(WAIT), "patches": json.loads(PATCHES)},
    ),
    (
        "dsml_string_true_composed_object",
        "deepseek-v3.2",
        _dsml("set_wait", [("wait", "true", WAIT)]),
        {"wait": json.loads(WAIT)},
    ),
    (
        "dsml_arguments_wrapper",
        "deepseek-v3.2",
        _dsml("get_weather", [("arguments", "false", '{"location":"Beijing"}')]),
        {"location": "Beijing"},
    ),
    (
        "dsml_input_wrapper",
        "deepseek-v3.2",
        _dsml("get_weather", [("input", "true", '{"location":"Beijing"}')]),
        {"location": "Beijing"},
    ),
    (
        "dsml_object_and_array",
        "deepseek-v3.2",
        _dsml("update", [("tags", "false", '["a", "b"]'), ("meta", "false", '{"k": 1}')]),
        {"tags": ["a", "b"], "meta": {"k": 1}},
    ),
    (
        "dsml_number_whole",
        "deepseek-v3.2",
        _dsml("measure", [("ratio", "false", "3.14"), ("whole", "false", "5.0")]),
        {"ratio": 3.14, "whole": 5},
    ),
    (
        "dsml_multi_typed",
        "deepseek-v3.2",
        _dsml("set_val", [("count", "false", "42"), ("label", "false", "hello")]),
        {"count": 42, "label": "hello"},
    ),
    (
        "dsml_multi_typed_null",
        "deepseek-v3.2",
        _dsml("clear", [("value", "false", "null")]),
        {"value": None},
    ),
    (
        "dsml_null_for_a_string",
        "deepseek-v3.2",
        _dsml("echo", [("text", "false", "null")]),
        {"text": "null"},
    ),
    (
        "dsml_conversion_fallbacks",
        "deepseek-v3.2",
        _dsml(
            "coerce",
            [
                ("union_value", "false", "hello"),
                ("bad_int", "false", "abc"),
                ("nullable_string", "false", "null"),
                ("null_string", "false", "null"),
                ("whole_number", "false", "3.0"),
            ],
        ),
        {
            "union_value": "hello",
            "bad_int": "abc",
            "nullable_string": None,
            "null_string": "null",
            "whole_number": 3,
        },
    ),
]


def _v4(name: str, params: list[tuple[str, str, str]]) -> str:
    return _dsml(name, params).replace("function_calls>", "tool_calls>").replace(">\n", ">")


_V4 = [
    (
        "dsml_v4_arguments_wrapper",
        _v4("get_weather", [("arguments", "false", '{"location":"Beijing"}')]),
        {"location": "Beijing"},
    ),
    (
        "dsml_v4_composed_schema_object_and_array",
        _v4("set_timer", [("wait", "false", WAIT), ("patches", "false", PATCHES)]),
        {"wait": json.loads(WAIT), "patches": json.loads(PATCHES)},
    ),
    (
        "dsml_v4_typed_and_angle_brackets",
        _v4(
            "update",
            [
                ("tags", "false", '["Paris", "Lyon"]'),
                ("meta", "true", '{"cmd": "git --version 2>&1"}'),
            ],
        ),
        {"tags": ["Paris", "Lyon"], "meta": {"cmd": "git --version 2>&1"}},
    ),
]
CASES += [
    (f"{tag}_{fmt}", fmt, text, args)
    for tag, text, args in _V4
    for fmt in ("deepseek-v3.2", "deepseek")
]
CASES += [
    (tag + "_family_name", "deepseek", text, args)
    for tag, fmt, text, args in list(CASES)
    if fmt == "deepseek-v3.2" and tag.startswith("dsml_") and not tag.startswith("dsml_v4")
]


def _calls(fmt: str, chunks: list[str]) -> list[tuple[str, str]]:
    parser = get_format(fmt).parser(ToolSpecs.from_tools(TOOLS), strict=False)
    events = run(parser, chunks)
    assert not [e for e in events if isinstance(e, Text) and e.text.strip()], events
    return [(e.name, _typed(e.arguments)) for e in events if isinstance(e, Call)]


@pytest.mark.parametrize(
    ("fmt", "text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_format_converts_values_whole_and_in_deltas(
    fmt: str, text: str, expected: dict[str, Any]
) -> None:
    want = _calls(fmt, [text])
    assert [args for _, args in want] == [_typed(expected)]
    for size in range(1, 8):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        assert _calls(fmt, chunks) == want, size


def test_strict_mode_keeps_what_the_flags_say_and_unwraps_nothing() -> None:
    specs = ToolSpecs.from_tools(TOOLS)
    strict = get_format("deepseek-v3.2").parser(specs, strict=True)
    text = _dsml("score", [("value", "true", "42")]) + _dsml(
        "get_weather", [("arguments", "false", '{"location":"Beijing"}')]
    )
    assert [e for e in run(strict, [text]) if isinstance(e, Call)] == [
        Call("score", {"value": "42"}),
        Call("get_weather", {"arguments": {"location": "Beijing"}}),
    ]
    assert strict.repairs == []
    lenient = get_format("deepseek-v3.2").parser(specs, strict=False)
    assert [e for e in run(lenient, [text]) if isinstance(e, Call)] == [
        Call("score", {"value": 42}),
        Call("get_weather", {"location": "Beijing"}),
    ]
    assert lenient.repairs == [Repair.VALUE_BY_SCHEMA, Repair.WRAPPER_UNWRAPPED]
