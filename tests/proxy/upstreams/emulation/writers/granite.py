"""IBM Granite: 3.x (`<|tool_call|>[…]`), 4.0 (`<tool_call>{…}</tool_call>`) and 20B FC
(`<function_call> {…}`), one writer per name; Granite 4.2's function tags in `<tool_call>`;
and the outputs and calls of vLLM's granite, granite4 and granite-20b-fc parser tests
(test_granite_tool_parser.py, test_granite4_tool_parser.py,
test_granite_20b_fc_tool_parser.py), put on the corpus's tools (test_function on set_config,
refresh and func on ping, find_bbox on search, get_stock_price on get_status)."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Calls, Writer
from tests.proxy.upstreams.emulation.vllm_common_cases import ESCAPED, PLAIN, TOKYO, TYPES

TOOL_CALL, OPEN, CLOSE, FUNCTION_CALL = (
    "<|tool_call|>",
    "<tool_call>",
    "</tool_call>",
    "<function_call>",
)
EOS = "<|end_of_text|>"
ROLE_RESULT = "\n<|start_of_role|>tool_response<|end_of_role|>pong<|end_of_text|>"
VLLM = "vLLM tests/tool_parsers/test_granite_tool_parser.py"
VLLM4 = "vLLM tests/tool_parsers/test_granite4_tool_parser.py"
VLLM20 = "vLLM tests/tool_parsers/test_granite_20b_fc_tool_parser.py"


def _json(value: Any, **options: Any) -> str:
    return json.dumps(value, ensure_ascii=False, **options)


def _items(calls: Calls) -> list[dict[str, Any]]:
    return [{"name": n, "arguments": a} for n, a in calls]


def _case(
    tag: str, source: str, text: str, calls: list[Any], content: str | None = "", **kw: Any
) -> dict:
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


TIME = ("get_time", {"timezone": "Asia/Tokyo"})
GRANITE3 = [
    _case("vllm_no_tool_calls", VLLM, PLAIN, [], PLAIN),
    _case("vllm_single_token_prefix", VLLM, f"{TOOL_CALL} {_json(_items([TOKYO]))}", [TOKYO]),
    _case(
        "vllm_parallel_pretty",
        VLLM,
        f"{TOOL_CALL} [\n  {_json(_items([TOKYO])[0])},\n  {_json(_items([TIME])[0])}\n]",
        [TOKYO, TIME],
    ),
    _case(
        "vllm_various_types_string_prefix",
        VLLM,
        f"{OPEN} [{_json({'name': 'set_config', 'arguments': TYPES}, indent=2)}]",
        [("set_config", TYPES)],
    ),
    _case(
        "vllm_empty_arguments",
        VLLM,
        f'{TOOL_CALL} [{{"name": "ping", "arguments": {{}}}}]',
        [("ping", {})],
    ),
    _case(
        "vllm_surrounding_text",
        VLLM,
        f"Let me check the weather for you.\n{TOOL_CALL} {_json(_items([TOKYO]))}\n"
        "I'll get that information.",
        [TOKYO],
        "Let me check the weather for you.\nI'll get that information.",
    ),
    _case(
        "vllm_escaped_strings_string_prefix",
        VLLM,
        f"{OPEN} [{_json({'name': 'write_file', 'arguments': ESCAPED}, indent=2)}]",
        [("write_file", ESCAPED)],
    ),
    _case(
        "vllm_malformed_cut_off",
        VLLM,
        f'{TOOL_CALL} [{{"name": "ping", "arguments": {{',
        [],
        None,
        truncated=True,
    ),
    _case(
        "vllm_object_after_token_marker",
        VLLM,
        f'{TOOL_CALL} {{"name": "ping", "arguments": {{}}}}',
        [("ping", {})],
    ),
    _case(
        "vllm_list_without_marker_is_text",
        VLLM,
        '[{"name": "ping", "arguments": "not a dict"}]',
        [],
        '[{"name": "ping", "arguments": "not a dict"}]',
    ),
    _case(
        "vllm_prose_with_list_is_text",
        VLLM,
        'Some text [{"name": "ping"}]',
        [],
        'Some text [{"name": "ping"}]',
    ),
    _case("vllm_string_prefix_format", VLLM, f"{OPEN} {_json(_items([TOKYO]))}", [TOKYO]),
    _case(
        "vllm_arguments_before_name",
        VLLM,
        f'{TOOL_CALL} [{{"arguments": {{"city": "Tokyo"}}, "name": "get_weather"}}, '
        f'{{"arguments": {{"timezone": "Asia/Tokyo"}}, "name": "get_time"}}]',
        [TOKYO, TIME],
    ),
    _case(
        "answer_opening_with_brackets_is_text",
        "scenario",
        "[1] Tokyo is sunny; [2] it is 9 pm there.",
        [],
        "[1] Tokyo is sunny; [2] it is 9 pm there.",
    ),
    _case(
        "bare_list_without_marker_is_text",
        "a server that drops special tokens (the markers gone, the calls stay text)",
        _json(_items([TOKYO])),
        [],
        _json(_items([TOKYO])),
    ),
    _case(
        "think_response_blocks",
        "Granite 3.2/3.3 thinking output",
        "<think>No tool needed.</think><response>Paris is sunny.</response>",
        [],
        "Paris is sunny.",
        reasoning="No tool needed.",
    ),
]

_BBOX = {"coordinates": [[23.54, 43.1], [-12.2, 54.3], [4, 5]], "coordinate_type": "latlong"}
_STOCK = {"symbol": "AAPL", "start_date": "2021-01-01", "end_date": "2021-12-31"}


def _granite4_text(stringified: bool) -> str:
    bbox = json.dumps(_BBOX) if stringified else _BBOX
    calls = [("search", bbox), ("get_status", _STOCK), ("search", bbox)]
    blocks = [f"{OPEN} {json.dumps({'name': n, 'arguments': a})} {CLOSE}" for n, a in calls]
    texts = [
        "Here goes the bbox call: \n",
        " Now the stock price call: \n ",
        " Now another bbox call: \n ",
        " See? I'm a helpful assistant.",
    ]
    return texts[0] + blocks[0] + texts[1] + blocks[1] + texts[2] + blocks[2] + texts[3]


_CONTENT4 = (
    "Here goes the bbox call: \nNow the stock price call: \n Now another bbox call: \n "
    "See? I'm a helpful assistant."
)
GRANITE4 = [
    _case(
        "vllm_granite4_prose_between_calls",
        VLLM4,
        _granite4_text(False),
        [("search", _BBOX), ("get_status", _STOCK), ("search", _BBOX)],
        _CONTENT4,
    ),
    _case(
        "vllm_granite4_arguments_as_json_string",
        VLLM4,
        _granite4_text(True),
        [("search", _BBOX), ("get_status", _STOCK), ("search", _BBOX)],
        _CONTENT4,
    ),
]


def _functions(name: str, args: dict[str, Any]) -> str:
    params = "".join(
        f"<parameter={k}>\n{v if isinstance(v, str) else _json(v)}\n</parameter>\n"
        for k, v in args.items()
    )
    return f"{OPEN}\n<function={name}>\n{params}</function>\n{CLOSE}"


G42 = "Granite 4.2 outputs (vLLM granite_thinking parser: Nemotron V3's, Qwen3's XML calls)"
GRANITE_42 = [
    _case(
        "granite42_think_then_call",
        G42,
        "<think>\nThe user wants the weather.\n</think>\n"
        + _functions("get_weather", {"city": "Paris"}),
        [("get_weather", {"city": "Paris"})],
        reasoning="The user wants the weather.",
    ),
    _case(
        "granite42_typed_values",
        G42,
        _functions("search", {"query": "007", "filters": {"lang": ["en"]}, "limit": 5}),
        [("search", {"query": "007", "filters": {"lang": ["en"]}, "limit": 5})],
    ),
    _case(
        "granite42_two_blocks",
        G42,
        _functions("get_weather", {"city": "Paris", "days": 2}) + "\n" + _functions("ping", {}),
        [("get_weather", {"city": "Paris", "days": 2}), ("ping", {})],
    ),
    _case(
        "granite42_end_marker_in_value",
        G42,
        _functions("write_file", {"path": "m.txt", "content": f"x {CLOSE} [1, 2] y"}),
        [("write_file", {"path": "m.txt", "content": f"x {CLOSE} [1, 2] y"})],
    ),
    _case(
        "granite42_prose_then_call",
        G42,
        "Let me check.\n" + _functions("get_weather", {"city": "Oslo"}),
        [("get_weather", {"city": "Oslo"})],
        "Let me check.",
    ),
    _case(
        "granite42_truncated_in_value",
        G42,
        f"{OPEN}\n<function=get_weather>\n<parameter=city>\nPar",
        [],
        None,
        truncated=True,
    ),
    _case(
        "granite42_unknown_tool",
        G42,
        _functions("delete_everything", {"now": True}),
        [],
        None,
    ),
]

GRANITE_20B = [
    _case("vllm_20b_single", VLLM20, f"{FUNCTION_CALL} {_json(_items([TOKYO])[0])}", [TOKYO]),
    _case(
        "vllm_20b_parallel",
        VLLM20,
        f"{FUNCTION_CALL} {_json(_items([TOKYO])[0])}\n{FUNCTION_CALL} {_json(_items([TIME])[0])}",
        [TOKYO, TIME],
    ),
    _case(
        "vllm_20b_various_types",
        VLLM20,
        f"{FUNCTION_CALL} {_json({'name': 'set_config', 'arguments': TYPES}, indent=2)}",
        [("set_config", TYPES)],
    ),
    _case(
        "vllm_20b_empty_arguments",
        VLLM20,
        f'{FUNCTION_CALL} {{"name": "ping", "arguments": {{}}}}',
        [("ping", {})],
    ),
    _case(
        "vllm_20b_surrounding_text",
        VLLM20,
        f"Let me check the weather for you.\n{FUNCTION_CALL} {_json(_items([TOKYO])[0])}",
        [TOKYO],
        "Let me check the weather for you.",
    ),
    _case(
        "vllm_20b_escaped_strings",
        VLLM20,
        f"{FUNCTION_CALL} {_json({'name': 'write_file', 'arguments': ESCAPED}, indent=2)}",
        [("write_file", ESCAPED)],
    ),
    _case(
        "vllm_20b_malformed_cut_off",
        VLLM20,
        f'{FUNCTION_CALL} {{"name": "ping", "arguments": {{',
        [],
        None,
        truncated=True,
    ),
    _case(
        "vllm_20b_list_after_marker",
        VLLM20,
        f'{FUNCTION_CALL} [{{"name": "ping", "arguments": {{}}}}]',
        [("ping", {})],
    ),
    _case(
        "vllm_20b_object_without_marker_is_text",
        VLLM20,
        '{"name": "ping", "arguments": {}}',
        [],
        '{"name": "ping", "arguments": {}}',
    ),
    _case("vllm_20b_name_not_a_string", VLLM20, f'{FUNCTION_CALL} {{"name": 123}}', [], None),
]


def _think(text: str) -> str:
    return f"<think>{text}</think>"


WRITERS = {
    "granite": Writer(
        block=lambda calls: TOOL_CALL + _json(_items(calls)),
        think=_think,
        answer=lambda t: f"<response>{t}</response>",
        say=lambda t: t + "\n",
        eos=EOS,
        marker=TOOL_CALL,
        broken=f'{TOOL_CALL}[{{"name": "get_weather", "arguments": {BAD}}}]',
        separator="\n",
        result=ROLE_RESULT,
        call_end="",
        extra=[*GRANITE3, *GRANITE4, *GRANITE_42, *GRANITE_20B],
    ),
    "granite4": Writer(
        block=lambda calls: "\n".join(f"{OPEN}\n{_json(i)}\n{CLOSE}" for i in _items(calls)),
        think=_think,
        answer=lambda t: t,
        say=lambda t: t + "\n",
        eos=EOS,
        marker=CLOSE,
        broken=f'{OPEN}\n{{"name": "get_weather", "arguments": {BAD}}}\n{CLOSE}',
        separator="\n",
        result="\n<tool_response>\npong\n</tool_response>",
        call_end=f"\n{CLOSE}",
        extra=[*GRANITE4, *GRANITE_42],
    ),
    "granite-20b-fc": Writer(
        block=lambda calls: "\n".join(f"{FUNCTION_CALL} {_json(i)}" for i in _items(calls)),
        think=_think,
        answer=lambda t: t,
        say=lambda t: t + "\n",
        eos=EOS,
        marker=FUNCTION_CALL,
        broken=f'{FUNCTION_CALL} {{"name": "get_weather", "arguments": {BAD}}}',
        separator="\n",
        result=ROLE_RESULT,
        call_end="",
        extra=GRANITE_20B,
    ),
}
