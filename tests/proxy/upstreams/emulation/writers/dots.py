"""dots.llm (`<dots_function_call>` blocks of `invoke` elements, raw parameter values), and
the outputs and calls of vLLM's dots parser tests (test_dots_tool_parser.py, streamed ones
joined) and SGLang's dots detector, put on the corpus's tools (set_location on set_flags,
open on _private_tool, ghost on delete_everything)."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import Calls, Writer

OPEN, CLOSE = "<dots_function_call>", "</dots_function_call>"
VLLM = "vLLM tests/tool_parsers/test_dots_tool_parser.py"


def _raw(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _invoke(name: str, args: dict[str, Any]) -> str:
    params = "".join(f'<parameter name="{k}">{_raw(v)}</parameter>\n' for k, v in args.items())
    return f'<invoke name="{name}">\n{params}</invoke>\n'


def block(calls: Calls) -> str:
    """One block holding an invoke per call."""
    return f"{OPEN}\n{''.join(_invoke(n, a) for n, a in calls)}{CLOSE}"


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    return {"tag": tag, "source": VLLM, "text": text, "calls": calls, "content": content, **kw}


def _compact(name: str, params: str) -> str:
    return f'<invoke name="{name}">{params}</invoke>'


CHAIRS = _compact("search", '<parameter name="query">chairs</parameter>')
TABLES = _compact("search", '<parameter name="query">tables</parameter>')
CASES = [
    _case(
        "vllm_schema_types_after_prose",
        f"ok{OPEN}"
        + _compact(
            "set_flags",
            '<parameter name="meta">{"city": "Shanghai"}</parameter>'
            '<parameter name="ratio">3</parameter>'
            '<parameter name="enabled">true</parameter>',
        )
        + CLOSE,
        [("set_flags", {"meta": {"city": "Shanghai"}, "ratio": 3, "enabled": True})],
        "ok",
    ),
    _case(
        "vllm_two_invokes_then_json_block",
        f"{OPEN}{CHAIRS}"
        + _compact("_private_tool", '<parameter name="x">7</parameter>')
        + f'{CLOSE}{OPEN}{{"name":"search","arguments":{{"query":"tables"}}}}{CLOSE}',
        [
            ("search", {"query": "chairs"}),
            ("_private_tool", {"x": 7}),
            ("search", {"query": "tables"}),
        ],
    ),
    _case(
        "vllm_unknown_tool_is_content",
        f"{OPEN}"
        + _compact("delete_everything", '<parameter name="query">chairs</parameter>')
        + CLOSE,
        [],
        f"{OPEN}"
        + _compact("delete_everything", '<parameter name="query">chairs</parameter>')
        + CLOSE,
    ),
    _case(
        "vllm_stream_marker_split_two_blocks",
        f"visible{OPEN}{CHAIRS}{CLOSE}{OPEN}{TABLES}{CLOSE}",
        [("search", {"query": "chairs"}), ("search", {"query": "tables"})],
        "visible",
    ),
    _case(
        "vllm_stream_garbage_then_valid",
        f"{OPEN}garbage{CLOSE}{OPEN}{CHAIRS}{CLOSE}",
        [("search", {"query": "chairs"})],
        None,
    ),
    _case("vllm_stream_stray_end_marker", f"some text {CLOSE}", [], "some text"),
    _case("vllm_stream_partial_marker_at_end", "answer <dots_func", [], "answer <dots_func"),
    _case(
        "vllm_stream_json_body",
        f'{OPEN}{{"name":"search","arguments":{{"query":"chairs"}}}}{CLOSE}',
        [("search", {"query": "chairs"})],
    ),
    _case(
        "sglang_quoted_names_single_quotes",
        f"{OPEN}<invoke name='get_weather'><parameter name='city'>Paris</parameter>"
        f"<parameter name='days'>2</parameter></invoke>{CLOSE}",
        [("get_weather", {"city": "Paris", "days": 2})],
        source="SGLang dots_detector.py",
    ),
    _case(
        "sglang_unquoted_names",
        f"{OPEN}<invoke name=get_weather><parameter name=city>Paris</parameter></invoke>{CLOSE}",
        [("get_weather", {"city": "Paris"})],
        source="SGLang dots_detector.py",
    ),
]

WRITERS = {
    "dots": Writer(
        block=block,
        think=lambda t: f"<think>\n{t}\n</think>\n\n",
        answer=lambda t: t,
        say=lambda t: t + "\n",
        eos="<|endofresponse|>",
        marker=CLOSE,
        broken=f'{OPEN}\n<invoke name="get_weather">\ncity=Paris\n</invoke>\n{CLOSE}',
        separator="\n",
        result="\n<tool_response>\npong\n</tool_response>",
        call_end=f"\n{CLOSE}",
        extra=CASES,
    )
}
