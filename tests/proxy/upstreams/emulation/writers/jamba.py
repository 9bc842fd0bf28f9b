"""AI21 Jamba (`<tool_calls>[{"name": …, "arguments": {…}}]</tool_calls>`), and the outputs and
calls of vLLM's jamba parser tests (test_jamba_tool_parser.py, streamed ones joined), put on
the corpus's tools (get_current_weather on get_weather)."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Calls, Writer

OPEN, CLOSE = "<tool_calls>", "</tool_calls>"
VLLM = "vLLM tests/tool_parsers/test_jamba_tool_parser.py"
DALLAS = {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}
ORLANDO = {"city": "Orlando", "state": "FL", "unit": "fahrenheit"}


def _item(name: str, arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def block(calls: Calls) -> str:
    """Every call of the reply in one `<tool_calls>` list."""
    return OPEN + "[" + ", ".join(_item(n, a) for n, a in calls) + "]" + CLOSE


def _pretty(*items: str) -> str:
    """The list as vLLM's tests write it: one call per indented line."""
    return " " + OPEN + "[\n    " + ",\n    ".join(items) + "\n]" + CLOSE


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    source = kw.pop("source", VLLM)
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


CASES = [
    _case("vllm_no_tools", "This is a test", [], "This is a test"),
    _case(
        "vllm_single_tool",
        _pretty(_item("get_weather", DALLAS)),
        [("get_weather", DALLAS)],
    ),
    _case(
        "vllm_single_tool_with_content",
        " Sure! let me call the tool for you." + _pretty(_item("get_weather", DALLAS))[1:],
        [("get_weather", DALLAS)],
        "Sure! let me call the tool for you.",
    ),
    _case(
        "vllm_parallel_tools",
        _pretty(_item("get_weather", DALLAS), _item("get_weather", ORLANDO)),
        [("get_weather", DALLAS), ("get_weather", ORLANDO)],
    ),
    _case(
        "vllm_arguments_in_single_delta",
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Dallas", "state": "TX"}}]'
        "</tool_calls>",
        [("get_weather", {"city": "Dallas", "state": "TX"})],
    ),
    _case(
        "list_cut_after_two_calls",
        OPEN + "[" + _item("ping", {}) + ", " + _item("get_weather", {"city": "Oslo"}) + ', {"na',
        [("ping", {}), ("get_weather", {"city": "Oslo"})],
        None,
        truncated=True,
        source="Jamba chat template",
    ),
    _case(
        "empty_list_is_no_call",
        OPEN + "[]" + CLOSE,
        [],
        None,
        source="Jamba chat template",
    ),
    _case(
        "call_then_end_of_message",
        block([("ping", {})]) + "<|eom|>",
        [("ping", {})],
        "",
        source="Jamba chat template",
    ),
]

WRITER = Writer(
    block=block,
    think=lambda t: f"<think>\n{t}\n</think>\n\n",
    answer=lambda t: t,
    say=lambda t: t,
    eos="<|eom|>",
    marker=CLOSE,
    broken=f'{OPEN}[{{"name": "get_weather", "arguments": {BAD}}}]{CLOSE}',
    separator="\n",
    result="<|eom|><|bom|><|tool|> pong",
    call_end=CLOSE,
    extra=CASES,
)
WRITERS = {"jamba": WRITER}
