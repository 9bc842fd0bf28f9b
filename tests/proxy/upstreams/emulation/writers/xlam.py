"""Salesforce xLAM (a JSON list of calls: bare, fenced after prose, after `[TOOL_CALLS]`, in
`<tool_call>`, after `</think>`), and the outputs and calls of vLLM's xlam parser tests
(test_xlam_tool_parser.py, streamed ones joined), put on the corpus's tools
(get_current_weather on get_weather). Where vLLM keeps a `<think>` block as content, it is
reasoning here."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Calls, Writer

VLLM = "vLLM tests/tool_parsers/test_xlam_tool_parser.py"
DALLAS = {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}
ORLANDO = {"city": "Orlando", "state": "FL", "unit": "fahrenheit"}
SEATTLE = {"city": "Seattle", "state": "WA", "unit": "celsius"}


def block(calls: Calls) -> str:
    """The calls as one JSON list."""
    return json.dumps([{"name": n, "arguments": a} for n, a in calls], ensure_ascii=False)


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    source = kw.pop("source", VLLM)
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


ONE = block([("get_weather", DALLAS)])
CASES = [
    _case("vllm_no_tools", "This is a test", [], "This is a test"),
    _case(
        "vllm_parallel_tool_calls",
        block([("get_weather", DALLAS), ("get_weather", ORLANDO)]),
        [("get_weather", DALLAS), ("get_weather", ORLANDO)],
    ),
    _case(
        "vllm_think_tag_then_list",
        "<think>I'll help you with that.</think>" + ONE,
        [("get_weather", DALLAS)],
        reasoning="I'll help you with that.",
    ),
    _case(
        "vllm_json_code_block_after_prose",
        "I'll help you with that.\n```json\n" + ONE + "\n```",
        [("get_weather", DALLAS)],
        "I'll help you with that.",
    ),
    _case("vllm_json_code_block_alone", "```json\n" + ONE + "\n```", [("get_weather", DALLAS)]),
    _case(
        "vllm_tool_calls_tag_after_prose",
        "I'll check the weather for you.[TOOL_CALLS]" + ONE,
        [("get_weather", DALLAS)],
        "I'll check the weather for you.",
    ),
    _case("vllm_tool_calls_tag_alone", "[TOOL_CALLS]" + ONE, [("get_weather", DALLAS)]),
    _case(
        "vllm_tool_call_xml_tags_after_prose",
        "I'll help you check the weather.<tool_call>" + ONE + "</tool_call>",
        [("get_weather", DALLAS)],
        "I'll help you check the weather.",
    ),
    _case(
        "vllm_tool_call_xml_tags_streamed",
        "I can help with that.<tool_call>" + ONE + "</tool_call>",
        [("get_weather", DALLAS)],
        "I can help with that.",
    ),
    _case(
        "vllm_list_structured",
        block([("get_weather", SEATTLE)]),
        [("get_weather", SEATTLE)],
    ),
    _case(
        "vllm_non_ascii_parallel",
        block([("get_weather", {"city": "北京"}), ("get_weather", {"city": "上海"})]),
        [("get_weather", {"city": "北京"}), ("get_weather", {"city": "上海"})],
    ),
    _case(
        "vllm_preprocess_code_block_untagged",
        "I'll help you with that.\n```\n" + block([("get_weather", {"city": "Seattle"})]) + "\n```",
        [("get_weather", {"city": "Seattle"})],
        "I'll help you with that.",
    ),
    _case(
        "fenced_object_is_an_example",
        'Like this:\n```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
        [],
        'Like this:\n```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
        source="xLAM chat template",
    ),
    _case(
        "list_in_prose_is_text",
        'You could send [{"name": "ping", "arguments": {}}] yourself.',
        [],
        'You could send [{"name": "ping", "arguments": {}}] yourself.',
        source="xLAM chat template",
    ),
    _case(
        "bracketed_answer_is_text",
        "[1] Paris is sunny; [2] Rome is warm.",
        [],
        "[1] Paris is sunny; [2] Rome is warm.",
        source="xLAM chat template",
    ),
    _case(
        "pretty_printed_list",
        '[\n    {"name": "get_weather", "arguments": {"city": "Paris"}},\n'
        '    {"name": "ping", "arguments": {}}\n]',
        [("get_weather", {"city": "Paris"}), ("ping", {})],
        source="xLAM-1 format instruction",
    ),
]

WRITER = Writer(
    block=block,
    think=lambda t: f"<think>\n{t}\n</think>\n\n",
    answer=lambda t: t,
    say=lambda t: t + "[TOOL_CALLS]",
    eos="<|eot_id|>",
    marker="[TOOL_CALLS]",
    broken=f'[{{"name": "get_weather", "arguments": {BAD}}}]',
    separator="\n[TOOL_CALLS]",
    result="<|start_header_id|>ipython<|end_header_id|>\n\npong",
    call_end="",
    extra=CASES,
)
WRITERS = {"xlam": WRITER}
