"""GLM's cases from the peers' parser tests (vLLM 0.33 `tests/tool_parsers/`
test_glm4_moe_tool_parser.py for GLM-4.5's layout, a newline after the name and between
pairs, and test_glm47_moe_tool_parser.py for GLM-4.7's, all on one line): their model outputs
(streamed ones joined) and expected calls and content, with the tools renamed to the corpus's
own (write_native_corpus.TOOLS): `get_current_weather` is `get_weather`, `get_current_date`
is `get_time`. Added to the GLM writer in families.py (`extra`)."""

from __future__ import annotations

from typing import Any

_GLM45 = "vLLM glm4_moe parser tests"
_GLM47 = "vLLM glm47_moe parser tests"


def _case(
    tag: str, source: str, text: str, calls: list[Any], content: str | None = ""
) -> dict[str, Any]:
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content}


def _pairs(args: list[tuple[str, str]], sep: str = "") -> str:
    return "".join(f"<arg_key>{k}</arg_key>{sep}<arg_value>{v}</arg_value>{sep}" for k, v in args)


BEIJING = [["get_weather", {"city": "Beijing"}]]
GLM: list[dict[str, Any]] = [
    _case(
        "glm45_newline_layout_after_content",
        f"{_GLM45} (test_extract_tool_calls_with_glm45_newline_format)",
        "I'll check it. <tool_call>get_weather\n"
        + _pairs([("city", "Dallas"), ("state", "TX"), ("unit", "fahrenheit")], "\n")
        + "</tool_call>",
        [["get_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}]],
        "I'll check it.",
    ),
    _case(
        "glm45_two_calls_pairs_on_one_line",
        f"{_GLM45} (test_extract_multiple_tool_calls_with_glm45_newline_format)",
        "<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>Dallas</arg_value>\n"
        "</tool_call>\n<tool_call>get_weather\n<arg_key>city</arg_key>"
        "<arg_value>Orlando</arg_value>\n</tool_call>",
        [["get_weather", {"city": "Dallas"}], ["get_weather", {"city": "Orlando"}]],
    ),
    _case(
        "glm45_zero_arguments_newline",
        f"{_GLM45} (test_extract_zero_argument_tool_call_with_glm45_newline_format)",
        "<tool_call>get_time\n</tool_call>",
        [["get_time", {}]],
    ),
    _case(
        "glm45_streamed_value_split",
        f"{_GLM45} (test_streaming_tool_call_with_glm45_newline_format)",
        "<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>Beijing</arg_value></tool_call>",
        BEIJING,
    ),
    _case(
        "glm47_plain_response",
        f"{_GLM47} (test_no_tool_call)",
        "This is a plain response.",
        [],
        "This is a plain response.",
    ),
    _case(
        "glm47_zero_arguments_inline",
        f"{_GLM47} (test_zero_arg_inline, test_empty_content_none)",
        "<tool_call>get_time</tool_call>",
        [["get_time", {}]],
    ),
    _case(
        "glm47_args_same_line",
        f"{_GLM47} (test_args_same_line)",
        "<tool_call>get_weather" + _pairs([("city", "Beijing")]) + "</tool_call>",
        BEIJING,
    ),
    _case(
        "glm47_args_with_newlines",
        f"{_GLM47} (test_args_with_newlines)",
        "<tool_call>get_weather\n" + _pairs([("city", "Beijing")], "\n") + "</tool_call>",
        BEIJING,
    ),
    _case(
        "glm47_whitespace_kept_in_values",
        f"{_GLM47} (test_whitespace_preserved_in_arg_values)",
        "<tool_call>get_weather" + _pairs([("city", "  Beijing  ")]) + "</tool_call>",
        [["get_weather", {"city": "  Beijing  "}]],
    ),
    _case(
        "glm47_content_before",
        f"{_GLM47} (test_content_before)",
        "Checking.<tool_call>get_time</tool_call>",
        [["get_time", {}]],
        "Checking.",
    ),
    _case(
        "glm47_two_calls",
        f"{_GLM47} (test_multiple)",
        "<tool_call>get_weather" + _pairs([("city", "Beijing")]) + "</tool_call>"
        "<tool_call>get_weather" + _pairs([("city", "Shanghai")]) + "</tool_call>",
        [*BEIJING, ["get_weather", {"city": "Shanghai"}]],
    ),
    _case(
        "glm47_blank_content_before_call",
        f"{_GLM47} (test_whitespace_content_none)",
        "  \n  <tool_call>get_time</tool_call>",
        [["get_time", {}]],
    ),
    _case(
        "glm47_content_then_call",
        f"{_GLM47} (structural tag tests: text followed by a call)",
        "Sure.<tool_call>get_weather" + _pairs([("city", "Paris")]) + "</tool_call>",
        [["get_weather", {"city": "Paris"}]],
        "Sure.",
    ),
    _case(
        "glm47_bare_less_than_and_quotes_in_value",
        f"{_GLM47} (structural tag tests: string values with spaces and a bare '<')",
        "<tool_call>search" + _pairs([("query", "grep 'a<b' x.py")]) + "</tool_call>",
        [["search", {"query": "grep 'a<b' x.py"}]],
    ),
    _case(
        "glm47_two_tools_reverse_order_arguments",
        f"{_GLM47} (structural tag tests: second tool, two calls; arguments in any order)",
        "<tool_call>search" + _pairs([("query", "ls -la")]) + "</tool_call>"
        "<tool_call>get_weather" + _pairs([("days", "3"), ("city", "Paris")]) + "</tool_call>",
        [["search", {"query": "ls -la"}], ["get_weather", {"days": 3, "city": "Paris"}]],
    ),
    _case(
        "glm47_integer_given_text",
        f"{_GLM47} (structural tag tests: integer-typed value given non-numeric text)",
        "<tool_call>get_weather" + _pairs([("city", "Oslo"), ("days", "abc")]) + "</tool_call>",
        [["get_weather", {"city": "Oslo", "days": "abc"}]],
    ),
]
