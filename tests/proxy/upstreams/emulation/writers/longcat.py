"""LongCat-Flash (`<longcat_tool_call>{…}</longcat_tool_call>`, `<longcat_think>`), the
outputs and calls of vLLM's longcat parser tests (test_longcat_tool_parser.py), put on the
corpus's tools (test_function on set_config, refresh on ping, get_time as it is), and the
key/value pairs LongCat-Flash-Lite writes in the same tags (as mlx-lm's parser reads them)."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Calls, Writer
from tests.proxy.upstreams.emulation.vllm_common_cases import ESCAPED, PLAIN, TOKYO, TYPES

OPEN, CLOSE = "<longcat_tool_call>", "</longcat_tool_call>"
VLLM = "vLLM tests/tool_parsers/test_longcat_tool_parser.py"


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


CASES = [
    _case(
        "vllm_no_tool_calls",
        PLAIN,
        [],
        PLAIN,
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
        _pretty("set_config", TYPES),
        [("set_config", TYPES)],
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

LITE = "LongCat-Flash-Lite outputs; mlx-lm longcat tool parser"


def _pairs(name: str, args: dict[str, Any]) -> str:
    pairs = "".join(
        f"<longcat_arg_key>{k}</longcat_arg_key>\n<longcat_arg_value>{_raw(v)}</longcat_arg_value>\n"
        for k, v in args.items()
    )
    return f"{OPEN}{name}\n{pairs}{CLOSE}"


def _raw(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


PAIR_CASES = [
    _case(
        "pairs_single",
        _pairs("get_weather", {"city": "Paris"}),
        [("get_weather", {"city": "Paris"})],
        source=LITE,
    ),
    _case(
        "pairs_typed_by_schema",
        _pairs("search", {"query": "007", "filters": {"lang": ["en"]}, "limit": 10}),
        [("search", {"query": "007", "filters": {"lang": ["en"]}, "limit": 10})],
        source=LITE,
    ),
    _case(
        "pairs_functions_namespace",
        _pairs("functions.get_weather", {"city": "Tokyo", "days": 2}),
        [("get_weather", {"city": "Tokyo", "days": 2})],
        source="LongCat TypeScript-namespace template outputs",
    ),
    _case(
        "pairs_end_marker_in_value",
        _pairs("write_file", {"path": "m.txt", "content": f"x {CLOSE} y"}),
        [("write_file", {"path": "m.txt", "content": f"x {CLOSE} y"})],
        source=LITE,
    ),
    _case(
        "pairs_prose_then_two_calls",
        "Checking both.\n" + _pairs("get_weather", {"city": "Paris"}) + "\n" + _pairs("ping", {}),
        [("get_weather", {"city": "Paris"}), ("ping", {})],
        "Checking both.",
        source=LITE,
    ),
    _case(
        "pairs_one_line",
        f"{OPEN}get_weather<longcat_arg_key>city</longcat_arg_key><longcat_arg_value>Oslo"
        f"</longcat_arg_value><longcat_arg_key>days</longcat_arg_key><longcat_arg_value>3"
        f"</longcat_arg_value>{CLOSE}",
        [("get_weather", {"city": "Oslo", "days": 3})],
        source=LITE,
    ),
    _case(
        "pairs_think_then_call",
        "<longcat_think>\nWeather first.\n</longcat_think>\n\n"
        + _pairs("get_weather", {"city": "Paris"}),
        [("get_weather", {"city": "Paris"})],
        reasoning="Weather first.",
        source=LITE,
    ),
    _case(
        "pairs_truncated_in_value",
        f"{OPEN}get_weather\n<longcat_arg_key>city</longcat_arg_key>\n<longcat_arg_value>Par",
        [],
        None,
        truncated=True,
        source=LITE,
    ),
    _case(
        "pairs_key_without_value",
        f"{OPEN}get_weather\n<longcat_arg_key>city</longcat_arg_key>\nParis\n{CLOSE}",
        [],
        None,
        source=LITE,
    ),
    _case(
        "pairs_unknown_tool",
        _pairs("delete_everything", {"now": True}),
        [],
        None,
        source=LITE,
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
        extra=[*CASES, *PAIR_CASES],
    )
}
