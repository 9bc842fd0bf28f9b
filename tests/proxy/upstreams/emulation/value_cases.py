"""Values converted by the tool's schema: the peers' cases (vLLM 0.33 `tests/tool_parsers/`:
deepseekv32, qwen3coder, glm4_moe, gemma4, functiongemma; Kimi K3's typed arguments) with their
tools renamed to the corpus's own (write_native_corpus.TOOLS). Added to the families' writers in
families.py (`extra`); test_values.py replays them with vLLM's own schemas."""

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


# Kimi K3: each argument typed by its `type`, then by the tool's schema.
_OPEN, _CLOSE, _SEP = "<|open|>", "<|close|>", "<|sep|>"


def _k3(name: str, args: list[tuple[str, str, str]]) -> str:
    inner = "".join(
        f'{_OPEN}argument key="{k}" type="{t}"{_SEP}{v}{_CLOSE}argument{_SEP}' for k, t, v in args
    )
    call = f'{_OPEN}call tool="{name}" index="1"{_SEP}{inner}{_CLOSE}call{_SEP}'
    return f"{_OPEN}tools{_SEP}{call}{_CLOSE}tools{_SEP}"


_K3 = "Kimi K3 XTML values by the tool's schema"
KIMI = [
    _case(
        "k3_string_typed_integer_by_schema",
        f"{_K3} (an integer the model typed string)",
        _k3("get_weather", [("city", "string", "Paris"), ("days", "string", "3")]),
        [["get_weather", {"city": "Paris", "days": 3}]],
    ),
    _case(
        "k3_number_for_a_string_by_schema",
        f"{_K3} (a number where the schema wants a string)",
        _k3("search", [("query", "number", "7"), ("limit", "number", "5.0")]),
        [["search", {"query": "7", "limit": 5}]],
    ),
    _case(
        "k3_array_items_by_schema",
        f"{_K3} (an array's items by the schema's items)",
        _k3("set_flags", [("tags", "array", "[1, 2]"), ("enabled", "string", "true")]),
        [["set_flags", {"tags": ["1", "2"], "enabled": True}]],
    ),
]


# Gemma 4 (typed values) and FunctionGemma (every value quoted), by the tool's schema.
Q = '<|"|>'


def _gemma(body: str) -> str:
    return f"<|tool_call>call:{body}<tool_call|>"


def _fg(body: str) -> str:
    return f"<start_function_call>call:{body}<end_function_call>"


_GEMMA = "vLLM gemma4 parser tests (values as strings, converted by schema at the engine layer)"
_FG = "vLLM functiongemma parser tests (TestParseArguments)"
GEMMA = [
    _case(
        "gemma_quoted_integer_by_schema",
        _GEMMA,
        _gemma(f"get_weather{{city:{Q}Paris{Q},days:{Q}2{Q}}}"),
        [["get_weather", {"city": "Paris", "days": 2}]],
    ),
    _case(
        "gemma_number_for_a_string_by_schema",
        _GEMMA,
        _gemma("search{query:42,limit:3.0}"),
        [["search", {"query": "42", "limit": 3}]],
    ),
    _case(
        "gemma_array_items_by_schema",
        f"{_GEMMA} (test_bare_values)",
        _gemma(f"set_flags{{tags:[42,true,{Q}x{Q}],ratio:{Q}0.5{Q}}}"),
        [["set_flags", {"tags": ["42", "true", "x"], "ratio": 0.5}]],
    ),
    _case(
        "gemma_quoted_keys",
        "vLLM gemma4 parser tests (test_delimited_keys_stripped)",
        _gemma(f"search{{{Q}query{Q}:{Q}Alice{Q},filters:{{{Q}inner{Q}:{Q}val{Q}}},limit:42}}"),
        [["search", {"query": "Alice", "filters": {"inner": "val"}, "limit": 42}]],
    ),
    _case(
        "gemma_bracket_inside_array_string",
        "vLLM gemma4 parser tests (test_string_element_with_closing_bracket)",
        _gemma(f"set_flags{{tags:[{Q}a]b{Q},{Q}c{Q}]}}"),
        [["set_flags", {"tags": ["a]b", "c"]}]],
    ),
    _case(
        "functiongemma_integer_by_schema",
        f"{_FG} (test_numeric_argument)",
        _fg("get_weather{city:<escape>Tokyo<escape>,days:<escape>42<escape>}"),
        [["get_weather", {"city": "Tokyo", "days": 42}]],
    ),
    _case(
        "functiongemma_boolean_by_schema",
        f"{_FG} (test_boolean_argument)",
        _fg("set_flags{enabled:<escape>true<escape>}"),
        [["set_flags", {"enabled": True}]],
    ),
    _case(
        "functiongemma_value_with_spaces",
        f"{_FG} (test_argument_with_spaces)",
        _fg("write_file{content:<escape>Hello World<escape>}"),
        [["write_file", {"content": "Hello World"}]],
    ),
    _case(
        "functiongemma_json_text_without_schema",
        f"{_FG} (test_numeric_argument: no schema, the text read as JSON)",
        _fg("set_config{count:<escape>42<escape>,name:<escape>Tokyo<escape>}"),
        [["set_config", {"count": 42, "name": "Tokyo"}]],
    ),
]
