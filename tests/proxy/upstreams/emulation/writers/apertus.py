"""Swiss AI Apertus (`<|tools_prefix|>[{"NAME": {…}}]<|tools_suffix|>`, `<|inner_prefix|>`
reasoning), and the outputs and calls of vLLM's apertus parser tests
(test_apertus_tool_parser.py, streamed ones joined), put on the corpus's tools (f and t1 on
set_config, calculate and t2 on set, t3 on get_status)."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Calls, Writer

PREFIX, SUFFIX = "<|tools_prefix|>", "<|tools_suffix|>"
VLLM = "vLLM tests/tool_parsers/test_apertus_tool_parser.py"


def block(calls: Calls) -> str:
    """One list of every call between the prefix and suffix tokens."""
    return PREFIX + json.dumps([{n: a} for n, a in calls], ensure_ascii=False) + SUFFIX


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    return {"tag": tag, "source": VLLM, "text": text, "calls": calls, "content": content, **kw}


LONDON = ("get_weather", {"location": "London"})
SF = ("get_weather", {"location": "San Francisco", "unit": "celsius"})
CASES = [
    _case(
        "vllm_no_tool_calls",
        "Hello, how can I help you today?",
        [],
        "Hello, how can I help you today?",
    ),
    _case(
        "vllm_single", f'{PREFIX}[{{"get_weather": {{"location": "London"}}}}]{SUFFIX}', [LONDON]
    ),
    _case(
        "vllm_multiple_arguments",
        f'{PREFIX}[{{"get_weather": {{"location": "San Francisco", "unit": "celsius"}}}}]{SUFFIX}',
        [SF],
    ),
    _case(
        "vllm_text_before",
        f'Let me check the weather for you. {PREFIX}[{{"get_weather": {{"location": "Paris"}}}}]'
        f"{SUFFIX}",
        [("get_weather", {"location": "Paris"})],
        "Let me check the weather for you.",
    ),
    _case(
        "vllm_multiple_calls",
        f'{PREFIX}[{{"get_weather": {{"location": "London"}}}}, '
        f'{{"get_time": {{"location": "London"}}}}]{SUFFIX}',
        [LONDON, ("get_time", {"location": "London"})],
    ),
    _case(
        "vllm_nested",
        f'{PREFIX}[{{"complex_function": {{"nested": {{"inner": "value"}}, "list": ["a", "b"]}}}}]'
        f"{SUFFIX}",
        [("complex_function", {"nested": {"inner": "value"}, "list": ["a", "b"]})],
    ),
    _case(
        "vllm_incomplete_cut_off",
        f'{PREFIX}[{{"get_weather": {{"location": "London"}}',
        [],
        None,
        truncated=True,
    ),
    _case(
        "vllm_missing_suffix",
        f'{PREFIX}[{{"get_weather": {{"location": "San Francisco", "unit": "celsius"}}}}]',
        [SF],
    ),
    _case(
        "vllm_stream_comma_in_string",
        f'{PREFIX}[{{"get_weather": {{"location": "Paris, France"}}}}]{SUFFIX}',
        [("get_weather", {"location": "Paris, France"})],
    ),
    *(
        _case(
            f"vllm_stream_scientific_{i}",
            f'{PREFIX}[{{"set": {arguments}}}]{SUFFIX}',
            [("set", json.loads(arguments))],
        )
        for i, arguments in enumerate(
            ['{"value": -2e-3}', '{"value": 1.5e3}', '{"values": [1.5e3, -2e-3]}']
        )
    ),
    _case(
        "vllm_stream_missing_suffix_after_content",
        f'Content{PREFIX}[{{"set_config": {{"a": 1}}}}]',
        [("set_config", {"a": 1})],
        "Content",
    ),
    _case(
        "vllm_stream_two_calls",
        f'{PREFIX}[{{"get_weather": {{"location": "Tokyo"}}}}, '
        f'{{"get_time": {{"location": "Tokyo"}}}}]{SUFFIX}',
        [("get_weather", {"location": "Tokyo"}), ("get_time", {"location": "Tokyo"})],
    ),
    _case(
        "vllm_stream_text_before",
        f'Let me check the weather. {PREFIX}[{{"get_weather": {{"location": "London"}}}}]{SUFFIX}',
        [LONDON],
        "Let me check the weather.",
    ),
    _case(
        "vllm_stream_content_then_block",
        f'Content{PREFIX}[{{"set_config": {{"a": 1}}}}]{SUFFIX}',
        [("set_config", {"a": 1})],
        "Content",
    ),
    _case(
        "vllm_mtp_one_chunk",
        f'Sure! {PREFIX}[{{"get_weather": {{"location": "London"}}}}]{SUFFIX}',
        [LONDON],
        "Sure!",
    ),
    _case(
        "vllm_mtp_three_calls",
        f'{PREFIX}[{{"set_config": {{"a": 1}}}}, {{"set": {{"b": 2}}}}, '
        f'{{"get_status": {{"c": 3}}}}]{SUFFIX}',
        [("set_config", {"a": 1}), ("set", {"b": 2}), ("get_status", {"c": 3})],
    ),
    _case(
        "vllm_character_by_character",
        f'Hi {PREFIX}[{{"get_weather": {{"location": "London"}}}}]{SUFFIX} ',
        [LONDON],
        "Hi",
    ),
    _case(
        "vllm_empty_deltas",
        f'Wait{PREFIX}[{{"get_weather": {{"location": "London"}}}}]{SUFFIX}',
        [LONDON],
        "Wait",
    ),
    _case(
        "answer_opening_with_brackets_is_text",
        "[1] London is rainy; [2] bring an umbrella.",
        [],
        "[1] London is rainy; [2] bring an umbrella.",
        source="scenario",
    ),
    _case(
        "bare_list_without_prefix_is_text",
        '[{"get_weather": {"location": "London"}}]',
        [],
        '[{"get_weather": {"location": "London"}}]',
        source="a server that drops special tokens (the markers gone, the calls stay text)",
    ),
    _case(
        "think_tags_then_call",
        "<think>Weather first.</think>" + block([("get_weather", {"city": "Paris"})]),
        [("get_weather", {"city": "Paris"})],
        reasoning="Weather first.",
        source="Apertus outputs with generic think tags",
    ),
]

WRITERS = {
    "apertus": Writer(
        block=block,
        think=lambda t: f"<|inner_prefix|>{t}<|inner_suffix|>",
        answer=lambda t: t,
        say=lambda t: t + " ",
        eos="<|assistant_end|>",
        marker=PREFIX,
        broken=f'{PREFIX}[{{"get_weather": {BAD}}}]{SUFFIX}',
        separator="",
        result="<|user_start|>pong<|user_end|>",
        call_end="",
        extra=CASES,
    )
}
