"""Values converted by the tool's schema: the peers' cases (vLLM 0.33 `tests/tool_parsers/`:
deepseekv32, qwen3coder, glm4_moe) with their tools renamed to the corpus's own
(write_native_corpus.TOOLS), for the formats that carry values as text. Added to the families'
writers in families.py (`extra`); test_values.py replays them with vLLM's own schemas."""

from __future__ import annotations

from typing import Any

DSML = "\uff5cDSML\uff5c"
FLAGS = [
    ("enabled", "true"),
    ("ratio", "3.14"),
    ("tags", '["a", "b"]'),
    ("meta", '{"key": "value"}'),
    ("note", "hello"),
]
FLAGS_TYPED = {"enabled": True, "ratio": 3.14, "tags": ["a", "b"], "meta": {"key": "value"}}


def _case(tag: str, source: str, text: str, calls: list[Any]) -> dict[str, Any]:
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": ""}


def _dsml(name: str, params: list[tuple[str, str, str]]) -> str:
    lines = "".join(
        f'<{DSML}parameter name="{key}" string="{flag}">{value}</{DSML}parameter>\n'
        for key, flag, value in params
    )
    invoke = f'<{DSML}invoke name="{name}">\n{lines}</{DSML}invoke>\n'
    return f"<{DSML}function_calls>\n{invoke}</{DSML}function_calls>"


_V32 = "vLLM deepseek_v32 parser tests"
DEEPSEEK_V32 = [
    _case(
        "vllm_string_true_integer",
        f"{_V32} (test_string_attr_true_coerced_by_schema)",
        _dsml("get_weather", [("city", "true", "Paris"), ("days", "true", "42")]),
        [["get_weather", {"city": "Paris", "days": 42}]],
    ),
    _case(
        "vllm_string_true_object",
        f"{_V32} (test_string_attr_true_coerced_by_composed_schema)",
        _dsml(
            "search",
            [("query", "true", "timer"), ("filters", "true", '{"type":"for","minutes":2880}')],
        ),
        [["search", {"query": "timer", "filters": {"type": "for", "minutes": 2880}}]],
    ),
    _case(
        "vllm_conversion_fallbacks",
        f"{_V32} (test_streaming_matches_non_streaming_conversion_fallbacks, test_number_param)",
        _dsml(
            "set_flags",
            [("note", "false", "hello"), ("ratio", "false", "3.0"), ("enabled", "false", "true")],
        ),
        [["set_flags", {"note": "hello", "ratio": 3, "enabled": True}]],
    ),
    _case(
        "vllm_null_for_a_string_and_a_nullable",
        f"{_V32} (test_null_coerced_back_to_string_by_schema, test_multi_typed_null_value)",
        _dsml("set_flags", [("note", "false", "null")])
        + "\n"
        + _dsml("search", [("query", "false", "null")]),
        [["set_flags", {"note": None}], ["search", {"query": "null"}]],
    ),
    _case(
        "string_flag_kept_for_a_nullable_string",
        'DeepSeek-V3.2 encoding (string="true" is the string as written)',
        _dsml("set_flags", [("note", "true", "null")]),
        [["set_flags", {"note": "null"}]],
    ),
    _case(
        "vllm_not_an_integer_stays_text",
        f"{_V32} (bad_int in test_streaming_matches_non_streaming_conversion_fallbacks)",
        _dsml("get_weather", [("city", "true", "Oslo"), ("days", "false", "abc")]),
        [["get_weather", {"city": "Oslo", "days": "abc"}]],
    ),
    _case(
        "vllm_arguments_wrapper",
        f"{_V32} (test_arguments_wrapper_repaired)",
        _dsml("get_weather", [("arguments", "false", '{"city":"Beijing"}')]),
        [["get_weather", {"city": "Beijing"}]],
    ),
    _case(
        "vllm_input_wrapper",
        f"{_V32} (test_input_wrapper_repaired)",
        _dsml("get_weather", [("input", "true", '{"city":"Beijing","days":"2"}')]),
        [["get_weather", {"city": "Beijing", "days": 2}]],
    ),
]


def _xml(name: str, params: list[tuple[str, str]]) -> str:
    inner = "".join(f"<parameter={key}>\n{value}\n</parameter>\n" for key, value in params)
    return f"<tool_call>\n<function={name}>\n{inner}</function>\n</tool_call>"


_QWEN = "vLLM qwen3coder parser tests"
XML = [
    _case(
        "vllm_type_conversion",
        f"{_QWEN} (test_extract_tool_calls_type_conversion)",
        _xml("set_flags", FLAGS),
        [["set_flags", {**FLAGS_TYPED, "note": "hello"}]],
    ),
    _case(
        "vllm_anyof_null_and_whole_number",
        f"{_QWEN} (test_extract_tool_calls_anyof_type_conversion); vLLM deepseek_v32 whole numbers",
        _xml("set_flags", [("note", "null"), ("ratio", "5.0")]),
        [["set_flags", {"note": None, "ratio": 5}]],
    ),
    _case(
        "arguments_wrapper",
        f"{_V32} (test_arguments_wrapper_repaired), as Qwen3-Coder writes it",
        _xml("get_weather", [("arguments", '{"city": "Beijing", "days": 2}')]),
        [["get_weather", {"city": "Beijing", "days": 2}]],
    ),
]


def _glm(name: str, params: list[tuple[str, str]]) -> str:
    pairs = "".join(
        f"<arg_key>{key}</arg_key><arg_value>{value}</arg_value>\n" for key, value in params
    )
    return f"<tool_call>{name}\n{pairs}</tool_call>"


_GLM = "vLLM glm4_moe parser tests (test_extract_tool_calls_coerces_schema_types)"
GLM = [
    _case(
        "vllm_coerces_schema_types",
        _GLM,
        _glm("set_flags", FLAGS),
        [["set_flags", {**FLAGS_TYPED, "note": "hello"}]],
    ),
    _case(
        "vllm_integer_and_whole_number",
        f"{_GLM}; vLLM deepseek_v32 whole numbers",
        _glm("get_weather", [("city", "add"), ("days", "42")])
        + "\n"
        + _glm("set_flags", [("ratio", "2.0"), ("note", "null")]),
        [["get_weather", {"city": "add", "days": 42}], ["set_flags", {"ratio": 2, "note": None}]],
    ),
    _case(
        "input_wrapper",
        f"{_V32} (test_input_wrapper_repaired), as GLM writes it",
        _glm("get_weather", [("input", '{"city": "Beijing"}')]),
        [["get_weather", {"city": "Beijing"}]],
    ),
]
