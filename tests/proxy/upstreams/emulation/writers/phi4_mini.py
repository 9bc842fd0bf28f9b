"""Phi-4-mini (`functools[{"name": …, "arguments": {…}}]`), and the outputs and calls of vLLM's
phi4mini parser tests (test_phi4mini_tool_parser.py: the shared parser-test cases), put on the
corpus's tools (test_function on set_config, refresh on ping, get_time on get_status)."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Calls, Writer
from tests.proxy.upstreams.emulation.vllm_common_cases import ESCAPED, PLAIN, TOKYO, TYPES

VLLM = "vLLM tests/tool_parsers/test_phi4mini_tool_parser.py"
MARKER = "functools"


def block(calls: Calls) -> str:
    """`functools` and the JSON list of the calls."""
    items = [{"name": n, "arguments": a} for n, a in calls]
    return MARKER + json.dumps(items, ensure_ascii=False)


def _pretty(name: str, arguments: dict[str, Any]) -> str:
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False, indent=2)
    return f"{MARKER}[{body}]"


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    source = kw.pop("source", VLLM)
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


CASES = [
    _case(
        "vllm_no_tool_calls",
        PLAIN,
        [],
        PLAIN,
    ),
    _case(
        "vllm_single",
        'functools[{"name": "get_weather", "arguments": {"city": "Tokyo"}}]',
        [TOKYO],
    ),
    _case(
        "vllm_parallel_on_lines",
        'functools[\n  {"name": "get_weather", "arguments": {"city": "Tokyo"}},\n'
        '  {"name": "get_status", "arguments": {"timezone": "Asia/Tokyo"}}\n]',
        [TOKYO, ("get_status", {"timezone": "Asia/Tokyo"})],
    ),
    _case("vllm_various_data_types", _pretty("set_config", TYPES), [("set_config", TYPES)]),
    _case("vllm_empty_arguments", 'functools[{"name": "ping", "arguments": {}}]', [("ping", {})]),
    _case(
        "vllm_surrounding_text",
        "Let me check the weather for you.\n"
        'functools[{"name": "get_weather", "arguments": {"city": "Tokyo"}}]\n'
        "Would you like to know more?",
        [TOKYO],
        "Let me check the weather for you.\nWould you like to know more?",
    ),
    _case("vllm_escaped_strings", _pretty("set_config", ESCAPED), [("set_config", ESCAPED)]),
    _case(
        "vllm_malformed_unclosed",
        'functools[{"name": "get_weather", "arguments": {',
        [],
        None,
    ),
    _case(
        "vllm_malformed_arguments_not_an_object",
        'functools[{"name": "get_weather", "arguments": "not a dict"}]',
        [],
        None,
    ),
    _case(
        "vllm_malformed_missing_brackets",
        'functools{"name": "ping", "arguments": {}}',
        [],
        'functools{"name": "ping", "arguments": {}}',
    ),
    _case(
        "vllm_malformed_empty_list",
        "functools[] This is just text",
        [],
        "functools[] This is just text",
    ),
    _case(
        "vllm_malformed_prose_in_brackets",
        "functools[ This is just text ]",
        [],
        "functools[ This is just text ]",
    ),
    _case(
        "parameters_key",
        'functools[{"name": "get_weather", "parameters": {"city": "Tokyo"}}]',
        [TOKYO],
        source="vLLM phi4mini parser (parameters read for arguments)",
    ),
    _case(
        "the_word_in_prose_is_text",
        "Python's functools module has lru_cache.",
        [],
        "Python's functools module has lru_cache.",
        source="Phi-4-mini chat template",
    ),
    _case(
        "tool_call_tokens",
        '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Tokyo"}}]<|/tool_call|>',
        [TOKYO],
        source="Phi-4-mini tokenizer (<|tool_call|> tokens)",
    ),
]

WRITER = Writer(
    block=block,
    think=lambda t: f"<think>\n{t}\n</think>\n\n",
    answer=lambda t: t,
    say=lambda t: t + "\n",
    eos="<|end|>",
    marker="functools[",
    broken=f'functools[{{"name": "get_weather", "arguments": {BAD}}}]',
    separator="\n",
    result="<|end|><|user|>pong",
    call_end="",
    extra=CASES,
)
WRITERS = {"phi4-mini": WRITER}
