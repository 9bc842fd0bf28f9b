"""Hermes's and Qwen3-Coder's cases from the peers' parser tests (vLLM 0.33
`tests/tool_parsers/test_hermes_tool_parser.py` and `test_qwen3coder_tool_parser.py`): their
model outputs (streamed ones joined) and expected calls and content, with the tools renamed to
the corpus's own (write_native_corpus.TOOLS): `get_current_weather` is `get_weather`,
`calculate_area` is `search` (shape, dimensions, precision: query, filters, limit),
`final_answer` is `set_flags`. Added to the writers in families.py (`extra`)."""

from __future__ import annotations

from typing import Any

_HERMES = "vLLM hermes parser tests"
_QWEN = "vLLM qwen3coder parser tests"


def _case(
    tag: str, source: str, text: str, calls: list[Any], content: str | None = "", **kw: Any
) -> dict[str, Any]:
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


_TRIGGER = '{"name": "set_flags", "arguments": {"enabled": true}}'
HERMES: list[dict[str, Any]] = [
    _case(
        "vllm_just_forward_text",
        f"{_HERMES} (test_hermes_parser_streaming_just_forward_text)",
        "This is some prior text that has nothing to do with tool calling.",
        [],
        "This is some prior text that has nothing to do with tool calling.",
    ),
    _case(
        "vllm_boolean_argument_on_lines",
        f"{_HERMES} (failure case bug 19056, tool call between tags)",
        f"<tool_call>\n{_TRIGGER}\n</tool_call>",
        [["set_flags", {"enabled": True}]],
    ),
    _case(
        "vllm_no_spaces_between_keys",
        f"{_HERMES} (test_hermes_parser_streaming)",
        '<tool_call>{"name": "get_weather","arguments": {"city":'
        '"San Francisco, California, United States", "unit": "celsius"}}</tool_call>',
        [["get_weather", {"city": "San Francisco, California, United States", "unit": "celsius"}]],
    ),
    _case(
        "vllm_content_then_call_no_space",
        f"{_HERMES} (content then tool call with stream interval)",
        'Sure, let me check the weather.<tool_call>{"name": "get_weather", '
        '"arguments": {"city": "NYC"}}</tool_call>',
        [["get_weather", {"city": "NYC"}]],
        "Sure, let me check the weather.",
    ),
    _case(
        "vllm_two_calls_back_to_back",
        f"{_HERMES} (multiple tool calls with stream interval)",
        '<tool_call>{"name": "search", "arguments": {"query": "cats"}}</tool_call>'
        '<tool_call>{"name": "search", "arguments": {"query": "dogs"}}</tool_call>',
        [["search", {"query": "cats"}], ["search", {"query": "dogs"}]],
    ),
    _case(
        "vllm_plain_text",
        f"{_HERMES} (just forward text with stream interval)",
        "This is plain text with no tool calling involved.",
        [],
        "This is plain text with no tool calling involved.",
    ),
    _case(
        "vllm_not_a_tool_call",
        f"{_HERMES} (test_hermes_parser_non_streaming_no_tool_call)",
        "This is not a tool call.",
        [],
        "This is not a tool call.",
    ),
    _case(
        "vllm_call_until_eos",
        f"{_HERMES} (test_hermes_parser_non_streaming_tool_call_until_eos)",
        f"<tool_call>\n{_TRIGGER}",
        [["set_flags", {"enabled": True}]],
    ),
    _case(
        "vllm_invalid_json_missing_brace",
        f"{_HERMES} (test_hermes_parser_non_streaming_tool_call_invalid_json)",
        '<tool_call>\n{"name": "set_flags", "arguments": {"enabled": true}',
        [],
        None,
    ),
    _case(
        "vllm_content_and_call_in_one_chunk",
        f"{_HERMES} (test_hermes_streaming_content_and_tool_call_in_single_chunk)",
        'Hi!<tool_call>{"name": "_private_tool", "arguments": {"x": 1}}</tool_call>',
        [["_private_tool", {"x": 1}]],
        "Hi!",
    ),
]


def _param(key: str, value: str) -> str:
    return f"<parameter={key}>\n{value}\n</parameter>\n"


def _function(name: str, params: list[tuple[str, str]]) -> str:
    inner = "".join(_param(k, v) for k, v in params)
    return f"<function={name}>\n{inner}</function>"


def _call(name: str, params: list[tuple[str, str]]) -> str:
    return f"<tool_call>\n{_function(name, params)}\n</tool_call>"


_DALLAS = [("city", "Dallas"), ("state", "TX"), ("unit", "fahrenheit")]
_DALLAS_ARGS = {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}
_ORLANDO = [("city", "Orlando"), ("state", "FL"), ("unit", "fahrenheit")]
_TX = [("city", "Dallas"), ("state", "TX")]
XML: list[dict[str, Any]] = [
    _case(
        "vllm_no_tools",
        f"{_QWEN} (test_extract_tool_calls_no_tools)",
        "This is a test response without any tool calls",
        [],
        "This is a test response without any tool calls",
    ),
    _case(
        "vllm_single_tool",
        f"{_QWEN} (single_tool)",
        _call("get_weather", _DALLAS),
        [["get_weather", _DALLAS_ARGS]],
    ),
    _case(
        "vllm_single_tool_with_content",
        f"{_QWEN} (single_tool_with_content)",
        "Sure! Let me check the weather for you." + _call("get_weather", _DALLAS),
        [["get_weather", _DALLAS_ARGS]],
        "Sure! Let me check the weather for you.",
    ),
    _case(
        "vllm_multiline_object_param",
        f"{_QWEN} (single_tool_multiline_param)",
        _call(
            "search",
            [("query", "rectangle"), ("filters", '{"width": 10, \n "height": 20}'), ("limit", "2")],
        ),
        [["search", {"query": "rectangle", "filters": {"width": 10, "height": 20}, "limit": 2}]],
    ),
    _case(
        "vllm_parallel_tools",
        f"{_QWEN} (parallel_tools)",
        _call("get_weather", _DALLAS) + "\n" + _call("get_weather", _ORLANDO),
        [
            ["get_weather", _DALLAS_ARGS],
            ["get_weather", {"city": "Orlando", "state": "FL", "unit": "fahrenheit"}],
        ],
    ),
    _case(
        "vllm_typed_params_after_content",
        f"{_QWEN} (tool_with_typed_params)",
        "Let me calculate that area for you."
        + _call("search", [("query", "circle"), ("filters", '{"radius": 15.5}'), ("limit", "3")]),
        [["search", {"query": "circle", "filters": {"radius": 15.5}, "limit": 3}]],
        "Let me calculate that area for you.",
    ),
    _case(
        "vllm_fallback_no_tool_call_tags",
        f"{_QWEN} (test_extract_tool_calls_fallback_no_tags)",
        _function("get_weather", _TX),
        [["get_weather", {"city": "Dallas", "state": "TX"}]],
    ),
    _case(
        "vllm_missing_closing_parameter_tag",
        f"{_QWEN} (test_extract_tool_calls_missing_closing_parameter_tag, streaming too)",
        "Let me check the weather for you:\n<tool_call>\n<function=get_weather>\n"
        "<parameter=city>\nDallas\n"
        + _param("state", "TX")
        + _param("unit", "fahrenheit")
        + "</function>\n</tool_call>",
        [["get_weather", _DALLAS_ARGS]],
        "Let me check the weather for you:",
    ),
    _case(
        "vllm_streaming_incremental",
        f"{_QWEN} (test_extract_tool_calls_streaming_incremental)",
        "I'll check the weather." + _call("get_weather", _TX),
        [["get_weather", {"city": "Dallas", "state": "TX"}]],
        "I'll check the weather.",
    ),
    _case(
        "vllm_missing_opening_tag",
        f"{_QWEN} (test_extract_tool_calls_streaming_missing_opening_tag)",
        "I'll check the weather for you.\n\n"
        + _function("get_weather", _DALLAS)
        + "\n</tool_call>",
        [["get_weather", _DALLAS_ARGS]],
        "I'll check the weather for you.",
    ),
    _case(
        "vllm_malformed_no_gt_delimiter",
        f"{_QWEN} (test_malformed_xml_no_gt_delimiter)",
        "<tool_call>\n<function=get_weather\n<parameter=city>Dallas</parameter>\n</function>\n"
        "</tool_call>",
        [],
        None,
    ),
    _case(
        "vllm_bad_call_then_valid",
        f"{_QWEN} (test_none_tool_calls_filtered)",
        "<tool_call>\n<function=bad_func_no_gt\n</function>\n</tool_call>\n<tool_call>\n"
        "<function=get_weather>\n<parameter=city>Dallas</parameter>\n"
        "<parameter=state>TX</parameter>\n</function>\n</tool_call>",
        [["get_weather", {"city": "Dallas", "state": "TX"}]],
        None,
    ),
    _case(
        "vllm_object_param_on_one_line",
        f"{_QWEN} (test_anyof_parameter_not_double_encoded)",
        '<tool_call>\n<function=search>\n<parameter=filters>{"key": "value", "count": 42}'
        "</parameter>\n</function>\n</tool_call>",
        [["search", {"filters": {"key": "value", "count": 42}}]],
    ),
    _case(
        "vllm_two_calls_second_in_close_delta",
        f"{_QWEN} (test_streaming_next_tool_call_starts_in_close_delta)",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nDallas\n</parameter>\n"
        "<parameter=state>\nTX\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n"
        "<function=get_weather>\n<parameter=city>\nOrlando\n</parameter>\n"
        "<parameter=state>\nFL\n</parameter>\n</function>\n</tool_call>",
        [
            ["get_weather", {"city": "Dallas", "state": "TX"}],
            ["get_weather", {"city": "Orlando", "state": "FL"}],
        ],
    ),
    _case(
        "vllm_string_not_serialized_twice",
        f"{_QWEN} (test_no_double_serialization_string_args)",
        "<tool_call>\n<function=write_file>\n<parameter=content>hello world</parameter>\n"
        "</function>\n</tool_call>",
        [["write_file", {"content": "hello world"}]],
    ),
]
