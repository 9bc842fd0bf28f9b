"""LongCat-Flash (`<longcat_tool_call>{…}</longcat_tool_call>`, `<longcat_think>`), and the
outputs and calls of vLLM's longcat parser tests (test_longcat_tool_parser.py), put on the
corpus's tools (test_function on set_flags, refresh on ping, get_time as it is)."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Calls, Writer

OPEN, CLOSE = "<longcat_tool_call>", "</longcat_tool_call>"
VLLM = "vLLM tests/tool_parsers/test_longcat_tool_parser.py"
TYPES = {
    "note": "hello",
    "limit": 42,
    "ratio": 3.14,
    "enabled": True,
    "tags": ["a", "b", "c"],
    "meta": {"nested": "value"},
}
ESCAPED = {
    "note": 'He said "hello"',
    "path": "C:\\Users\\file.txt",
    "newline": "line1\nline2",
    "unicode": "emoji: 🎉",
}


def _call(name: str, args: dict[str, Any]) -> str:
    return f"{OPEN}\n{json.dumps({'name': name, 'arguments': args}, ensure_ascii=False)}\n{CLOSE}"


def block(calls: Calls) -> str:
    """One block per call, one per line."""
    return "\n".join(_call(n, a) for n, a in calls)


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    return {"tag": tag, "source": VLLM, "text": text, "calls": calls, "content": content, **kw}


def _pretty(name: str, args: dict[str, Any]) -> str:
    body = json.dumps({"name": name, "arguments": args}, ensure_ascii=False, indent=2)
    return f"{OPEN}{body}{CLOSE}"


TOKYO = ("get_weather", {"city": "Tokyo"})
CASES = [
    _case(
        "vllm_no_tool_calls",
        "This is a regular response without any tool calls.",
        [],
        "This is a regular response without any tool calls.",
    ),
    _case(
        "vllm_single_compact",
        f'{OPEN}{{"name": "get_weather", "arguments": {{"city": "Tokyo"}}}}{CLOSE}',
        [TOKYO],
    ),
    _case(
        "vllm_parallel",
        f'{OPEN}{{"name": "get_weather", "arguments": {{"city": "Tokyo"}}}}{CLOSE}\n'
        f'{OPEN}{{"name": "get_time", "arguments": {{"timezone": "Asia/Tokyo"}}}}{CLOSE}',
        [TOKYO, ("get_time", {"timezone": "Asia/Tokyo"})],
    ),
    _case(
        "vllm_various_data_types",
        _pretty("set_flags", {**TYPES, "note": None, "empty": [], "empty_object": {}}),
        [("set_flags", {**TYPES, "note": None, "empty": [], "empty_object": {}})],
    ),
    _case(
        "vllm_empty_arguments",
        f'{OPEN}{{"name": "ping", "arguments": {{}}}}{CLOSE}',
        [("ping", {})],
    ),
    _case(
        "vllm_surrounding_text",
        "Let me check the weather for you.\n"
        f'{OPEN}{{"name": "get_weather", "arguments": {{"city": "Tokyo"}}}}{CLOSE}\n'
        "Here is the result.",
        [TOKYO],
        "Let me check the weather for you.\nHere is the result.",
    ),
    _case("vllm_escaped_strings", _pretty("write_file", ESCAPED), [("write_file", ESCAPED)]),
    _case(
        "vllm_malformed_cut_off",
        f'{OPEN}{{"name": "get_weather", "arguments": {{',
        [],
        None,
        truncated=True,
    ),
    _case(
        "vllm_malformed_arguments_not_a_dict",
        f'{OPEN}{{"name": "get_weather", "arguments": "not a dict"}}{CLOSE}',
        [],
        None,
    ),
    _case("vllm_malformed_invalid_json", f"Some text with {OPEN}invalid json", [], None),
    _case(
        "think_block_then_call",
        f"<think>Weather first.</think>\n{block([TOKYO])}",
        [TOKYO],
        reasoning="Weather first.",
    ),
]

WRITERS = {
    "longcat": Writer(
        block=block,
        think=lambda t: f"<longcat_think>\n{t}\n</longcat_think>\n\n",
        answer=lambda t: t,
        say=lambda t: t + "\n",
        eos="</longcat_s>",
        eos_content="</longcat_s>",
        marker=CLOSE,
        broken=f'{OPEN}\n{{"name": "get_weather", "arguments": {BAD}}}\n{CLOSE}',
        separator="\n",
        result="\n<longcat_tool_response>\npong\n</longcat_tool_response>",
        call_end=f"\n{CLOSE}",
        extra=CASES,
    )
}
