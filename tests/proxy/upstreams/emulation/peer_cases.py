"""DeepSeek's and Kimi's cases from the peers' parser tests (vLLM 0.33 `tests/tool_parsers/`
and `tests/tool_use/`): their model outputs and expected calls, with the tools renamed to the
corpus's own (write_native_corpus.TOOLS), for every version the family's name reads. Added to
the families' writers in families.py (`extra`)."""

from __future__ import annotations

import json
from typing import Any


def _ds(name: str) -> str:
    return f"<\uff5c{name.replace(' ', chr(0x2581))}\uff5c>"


CALLS_BEGIN, CALLS_END = _ds("tool calls begin"), _ds("tool calls end")
CALL_BEGIN, CALL_END, SEP = _ds("tool call begin"), _ds("tool call end"), _ds("tool sep")
DSML = "\uff5cDSML\uff5c"
PARIS = [["get_weather", {"city": "Paris"}]]


def _v3(name: str, args: str) -> str:
    return f"{CALL_BEGIN}function{SEP}{name}\n```json\n{args}\n```{CALL_END}"


def _v31(name: str, args: str) -> str:
    return f"{CALL_BEGIN}{name}{SEP}{args}{CALL_END}"


def _dsml(calls: list[tuple[str, list[tuple[str, str, str]]]], block: str, token: str) -> str:
    """DSML invokes; each parameter (key, string flag, raw value). `token`: the DSML token as
    the version writes it (V4.1 adds a space)."""
    invokes = "".join(
        f'<{token}invoke name="{name}">\n'
        + "".join(
            f'<{token}parameter name="{k}" string="{flag}">{v}</{token}parameter>\n'
            for k, flag, v in params
        )
        + f"</{token}invoke>\n"
        for name, params in calls
    )
    return f"<{token}{block}>\n{invokes}</{token}{block}>"


def _v32(calls: list[tuple[str, list[tuple[str, str, str]]]]) -> str:
    return _dsml(calls, "function_calls", DSML)


def _v4(calls: list[tuple[str, list[tuple[str, str, str]]]]) -> str:
    return _dsml(calls, "tool_calls", DSML)


def _v41(calls: list[tuple[str, list[tuple[str, str, str]]]]) -> str:
    return "\n\n" + _dsml(calls, "calls", f"{DSML} ")


_PLAN = [
    ("ratio", "false", "3"),
    ("enabled", "false", "false"),
    ("tags", "false", '["Beijing","Shanghai","Tokyo","New York"]'),
    ("note", "true", "靠窗座位"),
]
_PLAN_ARGS = {
    "ratio": 3,
    "enabled": False,
    "tags": ["Beijing", "Shanghai", "Tokyo", "New York"],
    "note": "靠窗座位",
}
_TYPED = {"enabled": True, "ratio": 3.14, "tags": ["a", "b"], "meta": {"k": 1}, "note": None}

DEEPSEEK: list[dict[str, Any]] = [
    # V3 / R1 (vLLM test_deepseekv3_tool_parser.py)
    {
        "tag": "v3_no_tool_calls",
        "source": "vLLM deepseek_v3 parser tests (no_tool_calls_output)",
        "text": "How can I help you today? I can check weather for you.",
        "calls": [],
        "content": "How can I help you today? I can check weather for you.",
    },
    {
        "tag": "v3_single_fenced",
        "source": "vLLM deepseek_v3 parser tests (single_tool_call_output)",
        "text": CALLS_BEGIN
        + _v3("get_weather", '{"city": "Tokyo", "unit": "celsius"}')
        + CALLS_END,
        "calls": [["get_weather", {"city": "Tokyo", "unit": "celsius"}]],
        "content": "",
    },
    {
        "tag": "v3_surrounding_text",
        "source": "vLLM deepseek_v3 parser tests (surrounding_text_output)",
        "text": "Let me check the weather for you."
        + CALLS_BEGIN
        + _v3("get_weather", '{"city": "Paris"}')
        + CALLS_END,
        "calls": PARIS,
        "content": "Let me check the weather for you.",
    },
    {
        "tag": "v3_parallel_fenced",
        "source": "vLLM deepseek_v3 parser tests (parallel_tool_calls_output)",
        "text": CALLS_BEGIN
        + _v3("get_weather", '{"city": "Tokyo", "days": 2}')
        + _v3("search", '{"query": "Tokyo hotels", "filters": {"check_in": "2025-01-15"}}')
        + CALLS_END,
        "calls": [
            ["get_weather", {"city": "Tokyo", "days": 2}],
            ["search", {"query": "Tokyo hotels", "filters": {"check_in": "2025-01-15"}}],
        ],
        "content": "",
    },
    {
        "tag": "v3_various_types",
        "source": "vLLM deepseek_v3 parser tests (various_data_types_output)",
        "text": CALLS_BEGIN
        + _v3(
            "set_flags",
            '{"note": "hello", "ratio": 3.14, "enabled": true, "meta": {"nested": "value", '
            '"n": null, "e": [], "o": {}}, "tags": ["a", "b", "c"]}',
        )
        + CALLS_END,
        "calls": [
            [
                "set_flags",
                {
                    "note": "hello",
                    "ratio": 3.14,
                    "enabled": True,
                    "meta": {"nested": "value", "n": None, "e": [], "o": {}},
                    "tags": ["a", "b", "c"],
                },
            ]
        ],
        "content": "",
    },
    {
        "tag": "v3_empty_arguments",
        "source": "vLLM deepseek_v3 parser tests (empty_arguments_output)",
        "text": CALLS_BEGIN + _v3("ping", "{}") + CALLS_END,
        "calls": [["ping", {}]],
        "content": "",
    },
    {
        "tag": "v3_escaped_strings",
        "source": "vLLM deepseek_v3 parser tests (escaped_strings_output)",
        "text": CALLS_BEGIN
        + _v3(
            "write_file", '{"content": "He said \\"hello\\"\\nline2", "path": "C:\\\\Users\\\\f"}'
        )
        + CALLS_END,
        "calls": [["write_file", {"content": 'He said "hello"\nline2', "path": "C:\\Users\\f"}]],
        "content": "",
    },
    {
        "tag": "v3_text_before_and_after",
        "source": "vLLM deepseek_v3 parser tests (test_preserves_text_after_tool_call)",
        "text": "let me check the weather."
        + CALLS_BEGIN
        + _v3("get_weather", '{"city": "Paris"}')
        + CALLS_END
        + "It is 30 degrees.",
        "calls": PARIS,
        "content": "let me check the weather.It is 30 degrees.",
    },
    {
        "tag": "v3_multiline_json",
        "source": "vLLM deepseek_v3 parser tests (test_multiline_json_arguments)",
        "text": CALLS_BEGIN
        + _v3("get_weather", json.dumps({"city": "Tokyo", "days": 1}, indent=2))
        + _v3("search", json.dumps({"query": "Tokyo", "limit": 5}, indent=2))
        + CALLS_END,
        "calls": [
            ["get_weather", {"city": "Tokyo", "days": 1}],
            ["search", {"query": "Tokyo", "limit": 5}],
        ],
        "content": "",
    },
    {
        "tag": "v3_malformed_unclosed_json",
        "source": "vLLM deepseek_v3 parser tests (malformed_input_outputs[0])",
        "text": CALLS_BEGIN + _v3("get_weather", '{"city": "Tokyo"') + CALLS_END,
        "calls": [],
        "content": None,
    },
    {
        "tag": "v3_malformed_no_call_begin",
        "source": "vLLM deepseek_v3 parser tests (malformed_input_outputs[1])",
        "text": f'{CALLS_BEGIN}function{SEP}get_weather\n```json\n{{"city": "Tokyo"}}\n```'
        + CALLS_END,
        "calls": [],
        "content": None,
    },
    # V3.1 (vLLM test_deepseekv31_tool_parser.py)
    {
        "tag": "v31_prefix_text",
        "source": "vLLM deepseek_v31 parser tests (test_extract_tool_calls_with_tool)",
        "text": "normal text" + CALLS_BEGIN + _v31("_private_tool", '{"x":1}') + CALLS_END,
        "calls": [["_private_tool", {"x": 1}]],
        "content": "normal text",
    },
    {
        "tag": "v31_two_calls_prefix_and_suffix",
        "source": "vLLM deepseek_v31 parser tests (test_extract_tool_calls_with_multiple_tools)",
        "text": "some prefix text"
        + CALLS_BEGIN
        + _v31("_private_tool", '{"x":1}')
        + _v31("get_weather", '{"days":2}')
        + CALLS_END
        + " some suffix text",
        "calls": [["_private_tool", {"x": 1}], ["get_weather", {"days": 2}]],
        "content": "some prefix textsome suffix text",
    },
    {
        "tag": "v31_multiline_json",
        "source": "vLLM deepseek_v31 parser tests (multiline arguments)",
        "text": CALLS_BEGIN
        + _v31("set_flags", json.dumps({"ratio": 1, "tags": ["1", "2"]}, indent=2))
        + _v31("_private_tool", '{"x":2}')
        + CALLS_END,
        "calls": [["set_flags", {"ratio": 1, "tags": ["1", "2"]}], ["_private_tool", {"x": 2}]],
        "content": "",
    },
    # V3.2 DSML under the family's name (vLLM test_deepseekv32_tool_parser.py)
    {
        "tag": "v32_no_params",
        "source": "vLLM deepseek_v32 parser tests (test_single_tool_no_params)",
        "text": _v32([("ping", [])]),
        "calls": [["ping", {}]],
        "content": "",
    },
    {
        "tag": "v32_content_before_call",
        "source": "vLLM deepseek_v32 parser tests (test_content_before_tool_call)",
        "text": "Sure, let me check! " + _v32([("get_weather", [("city", "true", "NYC")])]),
        "calls": [["get_weather", {"city": "NYC"}]],
        "content": "Sure, let me check!",
    },
    {
        "tag": "v32_two_invokes",
        "source": "vLLM deepseek_v32 parser tests (test_multiple_tools)",
        "text": _v32(
            [
                ("get_weather", [("city", "true", "SF")]),
                ("search", [("query", "true", "weather"), ("limit", "false", "3")]),
            ]
        ),
        "calls": [["get_weather", {"city": "SF"}], ["search", {"query": "weather", "limit": 3}]],
        "content": "",
    },
    {
        "tag": "v32_typed_json_params",
        "source": "vLLM deepseek_v32 parser tests (object, array, number, null params)",
        "text": _v32(
            [
                (
                    "set_flags",
                    [
                        ("enabled", "false", "true"),
                        ("ratio", "false", "3.14"),
                        ("tags", "false", '["a", "b"]'),
                        ("meta", "false", '{"k": 1}'),
                        ("note", "false", "null"),
                    ],
                )
            ]
        ),
        "calls": [["set_flags", _TYPED]],
        "content": "",
    },
    {
        "tag": "v32_reasoning_then_invoke",
        "source": "DeepSeek-V3.2 encoding (thinking mode) and vLLM deepseek_v32 parser tests",
        "text": "<think>Need the weather.</think>"
        + _v32([("get_weather", [("city", "true", "Paris")])]),
        "calls": PARIS,
        "content": "",
        "reasoning": "Need the weather.",
    },
    {
        "tag": "v32_truncated_in_invoke",
        "source": "vLLM deepseek_v32 parser tests (streaming, cut off)",
        "text": f'<{DSML}function_calls>\n<{DSML}invoke name="get_weather">\n'
        f'<{DSML}parameter name="city" string="true">Par',
        "calls": [],
        "content": None,
        "truncated": True,
    },
    # V4 (vLLM test_deepseekv4_tool_parser.py)
    {
        "tag": "v4_content_then_call",
        "source": "vLLM deepseek_v4 parser tests (test_extract_tool_calls)",
        "text": "Let me check. "
        + _v4([("get_weather", [("city", "true", "Beijing"), ("days", "false", "2")])]),
        "calls": [["get_weather", {"city": "Beijing", "days": 2}]],
        "content": "Let me check.",
    },
    {
        "tag": "v4_function_calls_wrapper",
        "source": "vLLM deepseek_v4 parser tests (test_function_calls_wrapper_is_not_recognized)",
        "text": _v32([("search", [("query", "true", "vllm")])]),
        "calls": [["search", {"query": "vllm"}]],
        "content": "",
    },
    {
        "tag": "v4_missing_block_start",
        "source": "vLLM deepseek_v4 parser tests (test_missing_tool_calls_wrapper_is_recovered)",
        "text": _v4([("search", [("query", "true", "vllm")])]).replace(f"<{DSML}tool_calls>\n", ""),
        "calls": [["search", {"query": "vllm"}]],
        "content": "",
    },
    {
        "tag": "v4_typed_params_cjk",
        "source": "vLLM deepseek_v4 parser tests (incremental argument chunks)",
        "text": _v4([("set_flags", _PLAN)]),
        "calls": [["set_flags", _PLAN_ARGS]],
        "content": "",
    },
    {
        "tag": "v4_angle_brackets_in_value",
        "source": "vLLM deepseek_v4 parser tests (test_no_dsml_closing_tag_leak_in_streamed_args)",
        "text": _v4([("search", [("query", "true", "git --version 2>&1")])]),
        "calls": [["search", {"query": "git --version 2>&1"}]],
        "content": "",
    },
    {
        "tag": "v4_composed_object_and_array",
        "source": "vLLM deepseek_v4 parser tests (test_composed_schema_converts_object_and_array)",
        "text": _v4(
            [
                (
                    "set_flags",
                    [
                        ("meta", "false", '{"type":"for","minutes":2880}'),
                        ("tags", "false", '[{"op":"replace","path":"/schedule"}]'),
                    ],
                )
            ]
        ),
        "calls": [
            [
                "set_flags",
                {
                    "meta": {"type": "for", "minutes": 2880},
                    "tags": [{"op": "replace", "path": "/schedule"}],
                },
            ]
        ],
        "content": "",
    },
    {
        "tag": "v4_no_newlines",
        "source": "vLLM deepseek_v4 parser tests (the arguments-wrapper test's layout)",
        "text": f'<{DSML}tool_calls><{DSML}invoke name="get_weather">'
        f'<{DSML}parameter name="city" string="true">Paris</{DSML}parameter>'
        f"</{DSML}invoke></{DSML}tool_calls>",
        "calls": PARIS,
        "content": "",
    },
    {
        "tag": "v4_unknown_invoke_beside_known",
        "source": "DeepSeek-V4 DSML; an unknown tool is never run",
        "text": _v4([("run_command", [("command", "true", "rm -rf /")]), ("ping", [])]),
        "calls": [["ping", {}]],
        "content": None,
    },
    {
        "tag": "v4_arguments_wrapper",
        "source": "vLLM deepseek_v4 parser tests (test_extract_tool_calls_arguments_wrapper)",
        "text": f'<{DSML}tool_calls><{DSML}invoke name="get_weather">'
        f'<{DSML}parameter name="arguments" string="false">{{"city":"Beijing"}}'
        f"</{DSML}parameter></{DSML}invoke></{DSML}tool_calls>",
        "calls": [["get_weather", {"city": "Beijing"}]],
        "content": "",
    },
    {
        "tag": "v32_string_flag_integer_by_schema",
        "source": "vLLM deepseek_v32 parser tests (test_string_attr_true_coerced_by_schema)",
        "text": _v32([("_private_tool", [("x", "true", "42")])]),
        "calls": [["_private_tool", {"x": 42}]],
        "content": "",
    },
    # V4.1 (vLLM test_structural_tag_registry.py: the strings its grammar accepts)
    {
        "tag": "v41_single_call",
        "source": "vLLM structural tag tests (test_deepseek_v41_named_choice_emits_one_call)",
        "text": _v41([("get_weather", [("city", "true", "Paris")])]),
        "calls": PARIS,
        "content": "",
    },
    {
        "tag": "v41_parallel_typed",
        "source": "vLLM structural tag tests (non-strict parallel calls keep typed DSML)",
        "text": _v41(
            [
                ("set_flags", [("meta", "false", '{"nested":[true,null,1.5]}')]),
                ("set_flags", [("meta", "false", '{"nested":[true,null,1.5]}')]),
            ]
        ),
        "calls": [["set_flags", {"meta": {"nested": [True, None, 1.5]}}]] * 2,
        "content": "",
    },
    {
        "tag": "v41_reasoning_then_call",
        "source": "vLLM structural tag tests (calls after reasoning)",
        "text": "<think>reason</think>"
        + _v41([("get_weather", [("city", "true", "Paris"), ("days", "false", "2")])]),
        "calls": [["get_weather", {"city": "Paris", "days": 2}]],
        "content": "",
        "reasoning": "reason",
    },
    {
        "tag": "v41_invalid_body",
        "source": "vLLM structural tag tests (a JSON body instead of DSML parameters is refused)",
        "text": f'\n\n<{DSML} calls>\n<{DSML} invoke name="get_weather">\n{{"city":"Paris"}}\n'
        f"</{DSML} invoke>\n</{DSML} calls>",
        "calls": [],
        "content": None,
    },
    {
        "tag": "v41_truncated",
        "source": "DeepSeek-V4.1 DSML cut off by the length limit",
        "text": f'\n\n<{DSML} calls>\n<{DSML} invoke name="get_weather">\n'
        f'<{DSML} parameter name="city" string="true">Pa',
        "calls": [],
        "content": None,
        "truncated": True,
    },
]


_V32_SRC = "vLLM deepseek_v32 parser tests"
_FC = f"<{DSML}function_calls>\n"
_TOKYO = (
    f'{_FC}<{DSML}invoke name="get_weather">\n<{DSML}parameter name="city" string="true">Tokyo'
    f"</{DSML}parameter>\n</{DSML}invoke>\n</{DSML}function_calls>"
)
DSML_STREAMING: list[dict[str, Any]] = [
    {
        "tag": "v32_false_partial_marker",
        "source": f"{_V32_SRC} (test_false_partial_marker_emitted)",
        "text": "<\uff5cDSM some regular text",
        "calls": [],
        "content": "<\uff5cDSM some regular text",
    },
    {
        "tag": "v32_delimiters_as_text_after_prose",
        "source": f"{_V32_SRC} (test_delimiter_preserved_fast_detokenization)",
        "text": "Here is the weather: " + _TOKYO,
        "calls": [["get_weather", {"city": "Tokyo"}]],
        "content": "Here is the weather:",
    },
    {
        "tag": "v32_params_on_one_line",
        "source": f"{_V32_SRC} (build_tool_call: test_tool_detection_skip_special_tokens_false)",
        "text": f'{_FC}<{DSML}invoke name="search">\n<{DSML}parameter name="query" string="true">'
        f'vllm documentation</{DSML}parameter><{DSML}parameter name="filters" string="false">'
        f'{{"lang": "en"}}</{DSML}parameter>\n</{DSML}invoke>\n</{DSML}function_calls>',
        "calls": [["search", {"query": "vllm documentation", "filters": {"lang": "en"}}]],
        "content": "",
    },
]
"""DSML cases that hold for V3.2 and V4 alike (read by `deepseek` and `deepseek-v3.2`)."""

# Kimi K2 (vLLM tests/tool_parsers/test_kimi_k2_tool_parser.py)
SECTION_BEGIN, SECTION_END = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"


def _k2(call_id: str, args: str) -> str:
    return f"<|tool_call_begin|>{call_id} <|tool_call_argument_begin|>{args}<|tool_call_end|>"


def _k2_section(*calls: str) -> str:
    return SECTION_BEGIN + "".join(calls) + SECTION_END


# Kimi K3 (vLLM tests/tool_use/test_kimi_k3_tool_parser.py, tests/tool_parsers/
# test_structural_tag_registry.py): XTML channels.
OPEN, CLOSE, XSEP = "<|open|>", "<|close|>", "<|sep|>"


def _k3_arg(key: str, kind: str, value: str) -> str:
    return f'{OPEN}argument key="{key}" type="{kind}"{XSEP}{value}{CLOSE}argument{XSEP}'


def _k3_call(tool: str, index: int, *args: str) -> str:
    return f'{OPEN}call tool="{tool}" index="{index}"{XSEP}{"".join(args)}{CLOSE}call{XSEP}'


def _k3_response(content: str) -> str:
    return f"{OPEN}response{XSEP}{content}{CLOSE}response{XSEP}"


def _k3_tools(*calls: str) -> str:
    return f"{OPEN}tools{XSEP}{''.join(calls)}{CLOSE}tools{XSEP}"


_K3_THINK = f"{OPEN}think{XSEP}step{CLOSE}think{XSEP}"
_K3_PARIS = _k3_call("get_weather", 1, _k3_arg("city", "string", "Paris"))


def _kimi(tag: str, source: str, text: str, calls: Any, content: str | None = "", **kw: Any):
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


_K2_SRC = "vLLM kimi_k2 parser tests"
_K3_SRC = "vLLM kimi_k3 parser tests"
_K3_TAG_SRC = "vLLM kimi_k3 structural tag tests"
KIMI: list[dict[str, Any]] = [
    _kimi(
        "k2_prose_then_call",
        f"{_K2_SRC} (single_tool_call)",
        "I'll check. " + _k2_section(_k2("functions.get_weather:0", '{"city": "Beijing"}')),
        [["get_weather", {"city": "Beijing"}]],
        "I'll check.",
    ),
    _kimi(
        "k2_parallel_same_tool",
        f"{_K2_SRC} (parallel_tool_calls)",
        "Compare weather. "
        + _k2_section(
            _k2("functions.get_weather:0", '{"city": "Beijing"}'),
            _k2("functions.get_weather:1", '{"city": "Shanghai"}'),
        ),
        [["get_weather", {"city": "Beijing"}], ["get_weather", {"city": "Shanghai"}]],
        "Compare weather.",
    ),
    _kimi(
        "k2_three_tools",
        f"{_K2_SRC} (three_tool_calls)",
        "Multiple tasks. "
        + _k2_section(
            _k2("functions.get_weather:0", '{"city": "New York"}'),
            _k2("functions.search:1", '{"query": "technology"}'),
            _k2("functions.write_file:2", '{"path": "user@example.com", "content": "Daily"}'),
        ),
        [
            ["get_weather", {"city": "New York"}],
            ["search", {"query": "technology"}],
            ["write_file", {"path": "user@example.com", "content": "Daily"}],
        ],
        "Multiple tasks.",
    ),
    _kimi(
        "k2_angle_brackets_in_json",
        f"{_K2_SRC} (angle_brackets_in_json)",
        "Process HTML. "
        + _k2_section(_k2("functions.write_file:0", '{"content": "<div>content</div>"}')),
        [["write_file", {"content": "<div>content</div>"}]],
        "Process HTML.",
    ),
    _kimi(
        "k2_multiline_json",
        f"{_K2_SRC} (multiline_json)",
        "Formatted. "
        + _k2_section(_k2("functions.search:0", '{\n  "query": "test",\n  "limit": 123\n}')),
        [["search", {"query": "test", "limit": 123}]],
        "Formatted.",
    ),
    _kimi(
        "k2_no_functions_prefix",
        f"{_K2_SRC} (no_functions_prefix)",
        "No prefix. " + _k2_section(_k2("get_weather:0", '{"city": "Tokyo"}')),
        [["get_weather", {"city": "Tokyo"}]],
        "No prefix.",
    ),
    _kimi(
        "k2_empty_arguments",
        f"{_K2_SRC} (empty_arguments)",
        "Empty args. " + _k2_section(_k2("functions.ping:0", "{}")),
        [["ping", {}]],
        "Empty args.",
    ),
    _kimi(
        "k2_invalid_json_beside_valid",
        f"{_K2_SRC} (test_invalid_json_still_extracted: the broken call is not run)",
        "Help. "
        + _k2_section(
            _k2("functions.get_weather:0", '{"city": "Beijing"'),
            _k2("functions.get_weather:1", '{"city": "Shanghai"}'),
        ),
        [["get_weather", {"city": "Shanghai"}]],
        None,
    ),
    _kimi(
        "k2_invalid_call_id",
        f"{_K2_SRC} (test_invalid_funcall_id_skipped)",
        "Help. "
        + _k2_section(
            _k2("functions.get_weather.0", '{"city": "Beijing"}'),
            _k2("functions.get_weather:1", '{"city": "Shanghai"}'),
        ),
        [["get_weather", {"city": "Shanghai"}]],
        None,
    ),
    _kimi(
        "k2_arguments_in_small_deltas",
        f"{_K2_SRC} (test_incremental_arguments)",
        "Help. "
        + SECTION_BEGIN
        + '<|tool_call_begin|>functions.get_weather:0 <|tool_call_argument_begin|>{"city": '
        '"Beijing"} <|tool_call_end|>' + SECTION_END,
        [["get_weather", {"city": "Beijing"}]],
        "Help.",
    ),
    _kimi(
        "k2_two_searches",
        f"{_K2_SRC} (test_multiple_tool_calls_at_interval)",
        "Compare. "
        + _k2_section(
            _k2("functions.search:0", '{"query": "cats"}'),
            _k2("functions.search:1", '{"query": "dogs"}'),
        ),
        [["search", {"query": "cats"}], ["search", {"query": "dogs"}]],
        "Compare.",
    ),
    _kimi(
        "k2_empty_section",
        f"{_K2_SRC} (test_empty_tool_section)",
        "Reasoning. " + SECTION_BEGIN + SECTION_END,
        [],
        "Reasoning.",
    ),
    _kimi(
        "k2_content_after_section",
        f"{_K2_SRC} (test_content_after_tool_section: vLLM drops the text after the section,"
        " Toolwire keeps it as it does for every family)",
        "Before. "
        + _k2_section(_k2("functions.get_weather:0", '{"city": "Tokyo"} '))
        + " After tools.",
        [["get_weather", {"city": "Tokyo"}]],
        "Before.After tools.",
    ),
    _kimi(
        "k2_noise_inside_section",
        f"{_K2_SRC} (test_noise_between_markers_suppressed)",
        "Reasoning. "
        + SECTION_BEGIN
        + " spurious noise "
        + _k2("functions.ping:0", "{} ")
        + " more noise "
        + _k2("functions.get_weather:1", '{"city": "Tokyo"}')
        + SECTION_END,
        [["ping", {}], ["get_weather", {"city": "Tokyo"}]],
        "Reasoning.",
    ),
    _kimi(
        "k2_truncated_in_arguments",
        f"{_K2_SRC} (test_truncated_tool_call_no_end_marker)",
        "I'll check. "
        + SECTION_BEGIN
        + '<|tool_call_begin|>functions.get_weather:0 <|tool_call_argument_begin|>{"city": "Bei',
        [],
        None,
        truncated=True,
    ),
    # K3
    _kimi(
        "k3_response_and_typed_arguments",
        f"{_K3_SRC} (test_extract_tool_calls_with_response_and_typed_arguments)",
        _k3_response("answer")
        + _k3_tools(
            _k3_call(
                "set_flags",
                1,
                _k3_arg("ratio", "number", "1"),
                _k3_arg("enabled", "boolean", "true"),
                _k3_arg("note", "string", "raw"),
            )
        ),
        [["set_flags", {"ratio": 1, "enabled": True, "note": "raw"}]],
        "answer",
    ),
    _kimi(
        "k3_reasoning_response_call",
        f"{_K3_SRC} (test_delegating_parser_preserves_tool_calls_after_reasoning)",
        _K3_THINK
        + _k3_response("answer")
        + _k3_tools(_k3_call("_private_tool", 1, _k3_arg("x", "number", "1"))),
        [["_private_tool", {"x": 1}]],
        "answer",
        reasoning="step",
    ),
    _kimi(
        "k3_reasoning_empty_response_call",
        f"{_K3_SRC} (required / named tool choice)",
        _K3_THINK
        + _k3_response("")
        + _k3_tools(_k3_call("_private_tool", 1, _k3_arg("x", "number", "1"))),
        [["_private_tool", {"x": 1}]],
        "",
        reasoning="step",
    ),
    _kimi(
        "k3_prefilled_response_no_call",
        f"{_K3_SRC} (auto, no call, consumed response prefix)",
        f"answer{CLOSE}response{XSEP}",
        [],
        "answer",
    ),
    _kimi(
        "k3_prefilled_response_then_call",
        f"{_K3_SRC} (required call, consumed response prefix)",
        f"{CLOSE}response{XSEP}"
        + _k3_tools(_k3_call("_private_tool", 1, _k3_arg("x", "number", "1"))),
        [["_private_tool", {"x": 1}]],
    ),
    _kimi(
        "k3_truncated_call",
        f"{_K3_SRC} (test_delegating_parser_truncated_tools_do_not_leak_xtml)",
        f'{CLOSE}response{XSEP}{OPEN}tools{XSEP}{OPEN}call tool="_private_tool" index="1"',
        [],
        None,
        truncated=True,
    ),
    _kimi(
        "k3_escaped_attributes",
        f"{_K3_SRC} (test_extract_tool_calls_unescapes_attributes)",
        _k3_tools(_k3_call("write_file", 1, _k3_arg("path", "string", "a&amp;b&quot;c"))),
        [["write_file", {"path": "a&amp;b&quot;c"}]],
    ),
    _kimi(
        "k3_no_arguments",
        f"{_K3_SRC} (test_tool_call_ids_are_unique_across_messages)",
        _k3_tools(_k3_call("ping", 1)),
        [["ping", {}]],
    ),
    _kimi(
        "k3_spaced_response_markers",
        f"{_K3_SRC} (test_extract_content_from_whitespace_degraded_markers)",
        f"{OPEN} response {XSEP}answer{CLOSE} response {XSEP}",
        [],
        "answer",
    ),
    _kimi(
        "k3_content_then_call",
        f"{_K3_SRC} (test_streaming_split_markers_do_not_leak)",
        f"{OPEN}response{XSEP}Hi"
        + _k3_tools(_k3_call("_private_tool", 1, _k3_arg("x", "number", "1"))),
        [["_private_tool", {"x": 1}]],
        "Hi",
    ),
    _kimi(
        "k3_two_arguments",
        f"{_K3_TAG_SRC} (response content, string and number)",
        _k3_response("Checking.")
        + _k3_tools(
            _k3_call(
                "get_weather",
                1,
                _k3_arg("city", "string", "Paris"),
                _k3_arg("days", "number", "3"),
            )
        ),
        [["get_weather", {"city": "Paris", "days": 3}]],
        "Checking.",
    ),
    _kimi(
        "k3_two_calls",
        f"{_K3_TAG_SRC} (two calls, second tool)",
        _k3_response("")
        + _k3_tools(_K3_PARIS, _k3_call("search", 2, _k3_arg("query", "string", "ls -la"))),
        [["get_weather", {"city": "Paris"}], ["search", {"query": "ls -la"}]],
    ),
    _kimi(
        "k3_regex_metacharacters",
        f"{_K3_TAG_SRC} (regex metacharacters and spaces in a string)",
        _k3_response("")
        + _k3_tools(_k3_call("search", 1, _k3_arg("query", "string", "grep -E 'a|b{2,}' x.py"))),
        [["search", {"query": "grep -E 'a|b{2,}' x.py"}]],
    ),
    _kimi(
        "k3_message_close_after_calls",
        f"{_K3_TAG_SRC} (trailing message-close marker)",
        _k3_response("") + _k3_tools(_K3_PARIS) + f"{CLOSE}message{XSEP}",
        [["get_weather", {"city": "Paris"}]],
    ),
    _kimi(
        "k3_unknown_tool",
        f"{_K3_TAG_SRC} (unknown tool name)",
        _k3_response("")
        + _k3_tools(_k3_call("get_temperature", 1, _k3_arg("city", "string", "x"))),
        [],
        None,
    ),
    _kimi(
        "k3_non_numeric_number",
        f"{_K3_TAG_SRC} (number argument given a non-numeric value)",
        _k3_response("") + _k3_tools(_k3_call("get_weather", 1, _k3_arg("days", "number", "abc"))),
        [],
        None,
    ),
    _kimi(
        "k3_markers_in_value",
        "Kimi K3 XTML: a string value holding the call's own close",
        _k3_tools(
            _k3_call(
                "write_file",
                1,
                _k3_arg("content", "string", f"x {CLOSE}call{XSEP} y"),
                _k3_arg("path", "string", "m.txt"),
            )
        ),
        [["write_file", {"content": f"x {CLOSE}call{XSEP} y", "path": "m.txt"}]],
    ),
]
