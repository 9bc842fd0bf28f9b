"""How inclusionAI's Ling 3 writes its calls: GLM-4.7's one-line pairs (SGLang's ling3
detector: a newline after the name or none, a call without arguments closed right after its
name; vLLM's ling3 parser: GLM-4.7's engine, thinking on by default)."""

from __future__ import annotations

from typing import Any

from tests.proxy.upstreams.emulation.families import Writer
from tests.proxy.upstreams.emulation.writers.pairs import case, pairs_call

_SGLANG = "SGLang ling3 detector"
_VLLM = "vLLM ling3 parser (GLM-4.7 engine)"


def _call(name: str, args: dict[str, Any]) -> str:
    return pairs_call(name, args, head="", line="")


CASES = [
    case(
        "sglang_newline_after_name",
        f"{_SGLANG} (a newline after the function name)",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
        "</tool_call>",
        [["get_weather", {"city": "Paris"}]],
    ),
    case(
        "sglang_argument_right_after_name",
        f"{_SGLANG} (the first argument tag right after the name)",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
        "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>",
        [["get_weather", {"city": "Paris", "days": 3}]],
    ),
    case(
        "sglang_no_argument_call_closed_at_once",
        f"{_SGLANG} (a no-argument call closed right after its name)",
        "<tool_call>ping</tool_call>",
        [["ping", {}]],
    ),
    case(
        "vllm_think_then_one_line_calls",
        f"{_VLLM}: reasoning, then two one-line calls",
        "<think>Two cities.</think><tool_call>get_weather<arg_key>city</arg_key>"
        "<arg_value>Paris</arg_value></tool_call><tool_call>get_weather<arg_key>city"
        "</arg_key><arg_value>Rome</arg_value></tool_call>",
        [["get_weather", {"city": "Paris"}], ["get_weather", {"city": "Rome"}]],
    ),
    case(
        "vllm_prose_then_call_same_line",
        f"{_VLLM}: content, then a call on the same line",
        "Checking.<tool_call>ping</tool_call>",
        [["ping", {}]],
        "Checking.",
    ),
    case(
        "typed_values_one_line",
        f"{_VLLM}: non-string values written as JSON",
        "<tool_call>set_flags<arg_key>enabled</arg_key><arg_value>true</arg_value>"
        '<arg_key>tags</arg_key><arg_value>["a"]</arg_value><arg_key>ratio</arg_key>'
        "<arg_value>0.5</arg_value></tool_call>",
        [["set_flags", {"enabled": True, "tags": ["a"], "ratio": 0.5}]],
    ),
]

WRITERS = {
    "ling": Writer(
        block=lambda calls: "".join(_call(n, a) for n, a in calls),
        think=lambda t: f"<think>{t}</think>",
        answer=lambda t: t,
        say=lambda t: t,
        eos="<|role_end|>",
        marker="</tool_call>",
        broken="<tool_call>get_weather<arg_key>city</arg_key>Paris</tool_call>",
        separator="",
        result="<tool_response>pong</tool_response>",
        call_end="</tool_call>",
        extra=CASES,
    )
}
