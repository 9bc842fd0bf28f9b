"""How Arcee Trinity writes its calls: Qwen's `<tool_call>` JSON blocks, after its reasoning or
inside it (SGLang's trinity detector, a Qwen 2.5 detector that reads calls inside `<think>`;
its cases follow that detector's behaviour). SGLang ships no test cases for it."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import HERMES, Writer

_SGLANG = "SGLang trinity detector (Qwen 2.5's calls, read inside <think> too)"


def _call(name: str, args: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    return {"tag": tag, "source": _SGLANG, "text": text, "calls": calls, "content": content, **kw}


PARIS = ("get_weather", {"city": "Paris"})
CASES = [
    _case(
        "call_inside_think",
        "<think>I need the weather.\n" + _call(*PARIS) + "\n</think>\n\n",
        [PARIS],
        reasoning="I need the weather.",
    ),
    _case(
        "call_inside_think_then_answer",
        "<think>Checking.\n" + _call(*PARIS) + "\nThat is all.</think>\n\nI asked for it.",
        [PARIS],
        "I asked for it.",
        reasoning="Checking.\nThat is all.",
    ),
    _case(
        "calls_inside_and_after_think",
        "<think>First the weather.\n" + _call(*PARIS) + "</think>\n" + _call("ping", {}),
        [PARIS, ("ping", {})],
        reasoning="First the weather.",
    ),
    _case(
        "two_calls_inside_think",
        "<think>" + _call(*PARIS) + _call("get_weather", {"city": "Rome"}) + "</think>",
        [PARIS, ("get_weather", {"city": "Rome"})],
        reasoning="",
    ),
    _case(
        "unknown_tool_inside_think",
        "<think>" + _call("rm_rf", {}) + "</think>Done.",
        [],
        "Done.",
    ),
    _case(
        "reasoning_cut_off_in_a_call",
        "<think>Let me see.\n<tool_call>\n" + '{"name": "get_weather", "arguments": {"city": "Pa',
        [],
        "",
        truncated=True,
    ),
    _case(
        "compact_call_after_think",
        '<think>Easy.</think><tool_call>{"name": "ping", "arguments": {}}</tool_call>',
        [("ping", {})],
        reasoning="Easy.",
    ),
]

WRITER = Writer(
    block=HERMES.block,
    think=HERMES.think,
    answer=HERMES.answer,
    say=HERMES.say,
    eos=HERMES.eos,
    marker=HERMES.marker,
    broken=HERMES.broken,
    separator=HERMES.separator,
    result=HERMES.result,
    call_end=HERMES.call_end,
    quotable=False,  # a call block inside its reasoning is a call
    extra=CASES,
)
WRITERS = {"trinity": WRITER}
