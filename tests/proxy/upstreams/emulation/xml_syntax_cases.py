"""The peers' cases of Qwen3-Coder's `<function=…><parameter=…>` syntax (vLLM 0.33
`tests/tool_parsers/test_step3p5_tool_parser.py`, whose outputs are Qwen3-Coder's), for the
families that write it in a wrapper of their own (Seed-OSS, MiMo, Step-3.5 and Step-5): the
outputs with the family's wrapper and value layout, streamed ones joined, on the corpus's tools
(get_current_weather on get_weather, calculate_area on search: shape as the query, dimensions
as the filters, precision as the limit)."""

from __future__ import annotations

import json
from typing import Any

STEP3P5 = "vLLM test_step3p5_tool_parser.py"
DALLAS = {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}


def function(name: str, params: list[tuple[str, str]], *, lines: bool) -> str:
    """One `<function=…>` tag, values on lines of their own or inline."""
    gap = "\n" if lines else ""
    inner = "".join(f"<parameter={k}>{gap}{v}{gap}</parameter>\n" for k, v in params)
    return f"<function={name}>\n{inner}</function>"


def raw(value: Any) -> str:
    """A value as the model writes it between tags: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def blocks(calls: list[tuple[str, dict[str, Any]]], open: str, close: str, *, lines: bool) -> str:
    """Each call's function tag in its own `open`…`close` wrapper."""
    return "\n".join(
        f"{open}\n{function(n, [(k, raw(v)) for k, v in a.items()], lines=lines)}\n{close}"
        for n, a in calls
    )


def qwen3_coder_cases(open: str, close: str, *, lines: bool) -> list[dict[str, Any]]:
    """The cases, each call in `open`…`close`."""

    def call(name: str, params: list[tuple[str, str]]) -> str:
        return f"{open}\n{function(name, params, lines=lines)}\n{close}"

    def case(tag: str, test: str, text: str, calls: list[Any], content: str = "") -> dict:
        source = f"{STEP3P5} ({test})"
        return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content}

    gap = "\n" if lines else ""
    dallas = call("get_weather", [("city", "Dallas"), ("state", "TX"), ("unit", "fahrenheit")])
    orlando = call("get_weather", [("city", "Orlando"), ("state", "FL"), ("unit", "celsius")])
    area = [("query", "rectangle"), ("filters", '{"width": 10, \n "height": 20}'), ("limit", "2")]
    circle = [("query", "circle"), ("filters", '{"radius": 15.5}'), ("limit", "3")]
    return [
        case("peer_single_call", "single_tool", dallas, [["get_weather", DALLAS]]),
        case(
            "peer_content_then_call",
            "single_tool_with_content",
            "Sure! Let me check the weather for you." + dallas,
            [["get_weather", DALLAS]],
            "Sure! Let me check the weather for you.",
        ),
        case(
            "peer_typed_params",
            "single_tool_multiline_param",
            call("search", area),
            [
                [
                    "search",
                    {"query": "rectangle", "filters": {"width": 10, "height": 20}, "limit": 2},
                ]
            ],
        ),
        case(
            "peer_parallel_calls",
            "parallel_tools",
            dallas + "\n" + orlando,
            [
                ["get_weather", DALLAS],
                ["get_weather", {"city": "Orlando", "state": "FL", "unit": "celsius"}],
            ],
        ),
        case(
            "peer_content_then_typed_call",
            "tool_with_typed_params",
            "Let me calculate that area for you." + call("search", circle),
            [["search", {"query": "circle", "filters": {"radius": 15.5}, "limit": 3}]],
            "Let me calculate that area for you.",
        ),
        case(
            "peer_content_between_calls",
            "streaming_mixed_content_and_multiple_tool_calls",
            "hello"
            + call("get_weather", [("city", "Dallas"), ("state", "TX")])
            + "hi"
            + call("search", [("query", "rectangle"), ("filters", '{"width": 10, "height": 5}')]),
            [
                ["get_weather", {"city": "Dallas", "state": "TX"}],
                ["search", {"query": "rectangle", "filters": {"width": 10, "height": 5}}],
            ],
            "hellohi",
        ),
        case(
            "peer_calls_without_gap",
            "multiple_tool_calls_no_content_between",
            dallas + orlando,
            [
                ["get_weather", DALLAS],
                ["get_weather", {"city": "Orlando", "state": "FL", "unit": "celsius"}],
            ],
        ),
        case(
            "peer_parameter_left_open",
            "extract_tool_calls_missing_closing_parameter_tag",
            f"Let me check the weather for you:\n{open}\n<function=get_weather>\n"
            f"<parameter=city>{gap}Dallas{gap}<parameter=state>{gap}TX{gap}</parameter>\n"
            f"</function>\n{close}",
            [["get_weather", {"city": "Dallas", "state": "TX"}]],
            "Let me check the weather for you:",
        ),
        case(
            "peer_function_without_wrapper",
            "extract_tool_calls_fallback_no_tags",
            function("get_weather", [("city", "Dallas"), ("state", "TX")], lines=lines),
            [["get_weather", {"city": "Dallas", "state": "TX"}]],
        ),
    ]
