"""Cohere Command R7B and Command A (`<|START_ACTION|>[{"tool_call_id": "0", "tool_name": …,
"parameters": {…}}]<|END_ACTION|>`), from Command A's and R7B's chat templates (their tool
plan, action and response turns), SGLang's command4 detector and llama.cpp's Command R7B
parser cases; vLLM has no parser test for Cohere (its parser needs cohere_melody). Command R
and R+ (2024) write the list after `Action: ```json` (the version name `command-r`)."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import Calls, Writer

ACTION, END = "<|START_ACTION|>", "<|END_ACTION|>"
TEMPLATE = "Command A / Command R7B chat templates"
SGLANG = "SGLang cohere_command4_detector.py"
LLAMA_CPP = "llama.cpp Command R7B chat parser tests"


def _item(i: int, name: str, args: dict[str, Any]) -> str:
    return json.dumps(
        {"tool_call_id": str(i), "tool_name": name, "parameters": args}, ensure_ascii=False
    )


def action(calls: Calls) -> str:
    """One action list, laid out as Command A's template renders it."""
    items = ",\n    ".join(_item(i, n, a) for i, (n, a) in enumerate(calls))
    return f"{ACTION}[\n    {items}\n]{END}"


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    source = kw.pop("source", TEMPLATE)
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


PARIS = [("get_weather", {"city": "Paris"})]
PLAN = "I will look up the weather in Paris."
CASES = [
    _case(
        "compact_one_line_action",
        ACTION + '[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": '
        '{"city": "Paris"}}]' + END,
        PARIS,
        source=SGLANG,
    ),
    _case(
        "action_then_end_of_turn",
        action(PARIS) + "<|END_OF_TURN_TOKEN|>",
        PARIS,
        source=SGLANG,
    ),
    _case(
        "prose_before_action",
        "Let me check. " + action(PARIS),
        PARIS,
        "Let me check.",
        source=SGLANG,
    ),
    _case(
        "two_calls_compact",
        ACTION + '[{"tool_call_id":"0","tool_name":"get_weather","parameters":{"city":"Paris"}},'
        '{"tool_call_id":"1","tool_name":"ping","parameters":{}}]' + END,
        [*PARIS, ("ping", {})],
        source=SGLANG,
    ),
    _case(
        "ids_from_one",
        ACTION + '[\n    {"tool_call_id": "1", "tool_name": "get_weather", "parameters": '
        '{"city": "Paris"}}\n]' + END,
        PARIS,
        source=LLAMA_CPP,
    ),
    _case(
        "plan_then_action",
        f"<|START_THINKING|>{PLAN}<|END_THINKING|>" + action(PARIS),
        PARIS,
        reasoning=PLAN,
        source=LLAMA_CPP,
    ),
    _case(
        "thinking_then_response",
        "<|START_THINKING|>I'm\nthinking<|END_THINKING|><|START_RESPONSE|>Hello, world!\n"
        "What's up?<|END_RESPONSE|>",
        [],
        "Hello, world!\nWhat's up?",
        reasoning="I'm\nthinking",
        source=LLAMA_CPP,
    ),
    _case(
        "response_only",
        "<|START_RESPONSE|>Hello, world!\nWhat's up?<|END_RESPONSE|>",
        [],
        "Hello, world!\nWhat's up?",
        source=LLAMA_CPP,
    ),
    _case(
        "command_a_text_answer",
        "<|START_THINKING|>Simple.<|END_THINKING|><|START_TEXT|>It is sunny.<|END_TEXT|>",
        [],
        "It is sunny.",
        reasoning="Simple.",
        source="Command A Vision / Reasoning (vLLM cohere_command4: START_TEXT)",
    ),
    _case(
        "empty_thinking_then_action",
        "<|START_THINKING|><|END_THINKING|>" + action(PARIS),
        PARIS,
        source=LLAMA_CPP,
    ),
    _case(
        "typed_parameters",
        action([("set_flags", {"enabled": True, "ratio": 0.5, "tags": ["a"], "note": None})]),
        [("set_flags", {"enabled": True, "ratio": 0.5, "tags": ["a"], "note": None})],
    ),
    _case(
        "action_without_ids",
        ACTION + '[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]' + END,
        PARIS,
        source=SGLANG,
    ),
    _case("empty_action", ACTION + "[]" + END, [], None, source=SGLANG),
    _case(
        "cut_off_after_first_call",
        ACTION + '[\n    {"tool_call_id": "0", "tool_name": "ping", "parameters": {}},\n'
        '    {"tool_call_id": "1", "tool_name": "get_weather", "parameters": {"ci',
        [("ping", {})],
        None,
        truncated=True,
        source=SGLANG,
    ),
]


def fenced(calls: Calls) -> str:
    """Command R's action list, as its template's example lays it out."""
    items = [{"tool_name": n, "parameters": a} for n, a in calls]
    return "Action: ```json\n" + json.dumps(items, indent=4, ensure_ascii=False) + "\n```"


COMMAND_R = "Command R / R+ tool-use template (Action: ```json list)"
COMMAND_R_CASES = [
    _case(
        "command_r_two_actions",
        fenced([("get_weather", {"city": "San Francisco, CA"}), ("get_weather", {"city": "Rome"})]),
        [("get_weather", {"city": "San Francisco, CA"}), ("get_weather", {"city": "Rome"})],
        source=COMMAND_R,
    ),
    _case(
        "command_r_plan_then_action",
        "Plan: I will look up the weather.\n" + fenced(PARIS),
        PARIS,
        "Plan: I will look up the weather.",
        source=COMMAND_R,
    ),
    _case(
        "command_r_compact_action",
        'Action: ```json\n[{"tool_name": "ping", "parameters": {}}]\n```',
        [("ping", {})],
        source=COMMAND_R,
    ),
    _case(
        "command_r_cut_off_after_first_action",
        'Action: ```json\n[\n    {"tool_name": "ping", "parameters": {}},\n'
        '    {"tool_name": "get_w',
        [("ping", {})],
        None,
        truncated=True,
        source=COMMAND_R,
    ),
    _case(
        "command_r_fence_in_a_value",
        fenced([("write_file", {"path": "a.md", "content": "```py\nx = 1\n```"})]),
        [("write_file", {"path": "a.md", "content": "```py\nx = 1\n```"})],
        source=COMMAND_R,
    ),
]

WRITER = Writer(
    block=action,
    think=lambda t: f"<|START_THINKING|>{t}<|END_THINKING|>",
    answer=lambda t: f"<|START_RESPONSE|>{t}<|END_RESPONSE|>",
    say=None,
    eos="<|END_OF_TURN_TOKEN|>",
    marker=END,
    broken=ACTION + '[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": '
    '{"city": "Paris" "days": 2}}]' + END,
    separator="",
    result="<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|><|START_TOOL_RESULT|>"
    '[{"tool_call_id": "0", "results": {"0": {"content": "pong"}}, "is_error": null}]'
    "<|END_TOOL_RESULT|>",
    call_end="\n]" + END,
    extra=[*CASES, *COMMAND_R_CASES],
)
WRITERS = {
    "cohere": WRITER,
    "command-r": Writer(
        block=fenced,
        think=WRITER.think,
        answer=lambda t: t,
        say=lambda t: t + "\n",
        eos="<|END_OF_TURN_TOKEN|>",
        marker="```",
        broken='Action: ```json\n[{"tool_name": "get_weather", "parameters": {"city": "Paris" '
        '"days": 2}}]\n```',
        separator="\n",
        result="\n<results>\nDocument: 0\ntool: ping\npong\n</results>",
        call_end="\n```",
        extra=COMMAND_R_CASES,
    ),
}
