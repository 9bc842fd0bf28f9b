"""Hunyuan-A13B (`<think>…</think>` then `<answer>` holding `<tool_calls>[…]</tool_calls>` or
prose after `助手：`), and the outputs and calls of vLLM's hunyuan_a13b parser tests
(test_hunyuan_a13b_tool_parser.py, streamed ones joined), put on the corpus's tools
(register_user and complex_tool on set_config); HY v3/v4's pair calls in the same section
(vLLM's hy_v3 parser tests, SGLang's hunyuan detector; get_current_date on get_time)."""

# The template's Chinese words keep their full-width punctuation.
# ruff: noqa: RUF001, RUF002
from __future__ import annotations

from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Writer
from tests.proxy.upstreams.emulation.vllm_common_cases import REGISTER_USER
from tests.proxy.upstreams.emulation.writers.jamba import CLOSE, OPEN, block

VLLM = "vLLM tests/tool_parsers/test_hunyuan_a13b_tool_parser.py"
MODEL = "Hunyuan-A13B agent guide (its template's output)"
HY_VLLM = "vLLM tests/tool_parsers/test_hy_v3_tool_parser.py (HY v3 under hunyuan)"
HY_SGLANG = "SGLang hunyuan_detector.py (HY v3/v4 under hunyuan)"
BEIJING = {"city": "Beijing", "date": "2026-03-30"}
HANGZHOU = {"city": "Hangzhou", "date": "2026-03-30"}
SF = {"city": "San Francisco", "metric": "celsius"}
NESTED = {"level1": {"level2": {"level3": {"value": 123}}}}


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    source = kw.pop("source", VLLM)
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content, **kw}


def _answer(text: str) -> str:
    return f"<answer>\n{text}\n</answer>"


def _hy(name: str, pairs: dict[str, str], *, line: str = "\n", sep: str = "<tool_sep>") -> str:
    body = "".join(
        f"<arg_key>{k}</arg_key>{line}<arg_value>{v}</arg_value>{line}" for k, v in pairs.items()
    )
    return f"<tool_call>{name}{sep}{line}{body}</tool_call>"


def _section(*calls: str, line: str = "\n") -> str:
    return "<tool_calls>" + line + line.join(calls) + line + "</tool_calls>"


HY_CASES = [
    _case(
        "hy_v3_zero_arg_inline",
        "<tool_calls><tool_call>get_time<tool_sep></tool_call></tool_calls>",
        [("get_time", {})],
        source=HY_VLLM,
    ),
    _case(
        "hy_v3_zero_arg_newline",
        "<tool_calls>\n<tool_call>get_time<tool_sep>\n</tool_call>\n</tool_calls>",
        [("get_time", {})],
        source=HY_VLLM,
    ),
    _case(
        "hy_v3_args_same_line",
        _section(_hy("get_weather", BEIJING, line=""), line=""),
        [("get_weather", BEIJING)],
        source=HY_VLLM,
    ),
    _case(
        "hy_v3_args_with_newlines",
        _section(_hy("get_weather", BEIJING)),
        [("get_weather", BEIJING)],
        source=HY_VLLM,
    ),
    _case(
        "hy_v3_content_before",
        "Checking.<tool_calls>\n<tool_call>get_time<tool_sep>\n</tool_call>\n</tool_calls>",
        [("get_time", {})],
        "Checking.",
        source=HY_VLLM,
    ),
    _case(
        "hy_v3_multiple",
        _section(_hy("get_weather", BEIJING), _hy("get_weather", HANGZHOU)),
        [("get_weather", BEIJING), ("get_weather", HANGZHOU)],
        source=HY_VLLM,
    ),
    _case(
        "hy_v4_one_line_without_sep",
        _section(_hy("get_weather", {"city": "Paris", "days": "2"}, line="", sep=""), line=""),
        [("get_weather", {"city": "Paris", "days": 2})],
        source=HY_SGLANG,
    ),
    _case(
        "hy_v4_suffixed_tokens",
        "<tool_calls:6124c78e><tool_call:6124c78e>ping</tool_call:6124c78e></tool_calls:6124c78e>",
        [("ping", {})],
        source=HY_SGLANG,
    ),
    _case(
        "hy_value_holding_the_section_end",
        _section(_hy("write_file", {"path": "a.txt", "content": 'x </tool_calls> "y'})),
        [("write_file", {"path": "a.txt", "content": 'x </tool_calls> "y'})],
        source=HY_SGLANG,
    ),
    _case(
        "hy_cut_off_in_second_call",
        "<tool_calls>\n" + _hy("ping", {}) + "\n<tool_call>get_weather<tool_sep>\n<arg_key>ci",
        [("ping", {})],
        None,
        truncated=True,
        source=HY_SGLANG,
    ),
]

CASES = [
    _case("vllm_no_tool_call", "How can I help you today?", [], "How can I help you today?"),
    _case(
        "vllm_single",
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "San Francisco", '
        '"metric": "celsius"}}]</tool_calls>',
        [("get_weather", SF)],
    ),
    _case(
        "vllm_multiple",
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "San Francisco", "metric": '
        '"celsius"}}, {"name": "set_config", "arguments": {"name": "John Doe", "age": 37, '
        '"address": {"city": "San Francisco", "state": "CA"}, "role": null, "passed_test": true, '
        '"aliases": ["John", "Johnny"]}}]</tool_calls>',
        [("get_weather", SF), ("set_config", REGISTER_USER)],
    ),
    _case(
        "vllm_content_before",
        'I will call the tool now. <tool_calls>[{"name": "get_weather", "arguments": '
        '{"city": "Boston"}}]</tool_calls>',
        [("get_weather", {"city": "Boston"})],
        "I will call the tool now.",
    ),
    _case(
        "vllm_content_after_is_content",
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Seattle"}}]</tool_calls>'
        "\nThank you!",
        [("get_weather", {"city": "Seattle"})],
        "Thank you!",
    ),
    _case(
        "vllm_nested",
        '<tool_calls>[{"name": "set_config", "arguments": {"level1": {"level2": {"level3": '
        '{"value": 123}}}}}]</tool_calls>',
        [("set_config", NESTED)],
    ),
    _case(
        "vllm_streamed_then_answer_end",
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Boston"}}]</tool_calls>'
        "\n</answer>",
        [("get_weather", {"city": "Boston"})],
    ),
    _case(
        "vllm_non_ascii",
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "北京"}}]</tool_calls>',
        [("get_weather", {"city": "北京"})],
    ),
    _case(
        "slow_thinking_call_in_answer",
        "<think>\nThe user asks about Shenzhen.\n</think>\n"
        + _answer(block([("get_weather", {"city": "Shenzhen"})])),
        [("get_weather", {"city": "Shenzhen"})],
        reasoning="The user asks about Shenzhen.",
        source=MODEL,
    ),
    _case(
        "fast_mode_empty_think_compact_answer",
        "<think>\n\n</think>\n<answer>"
        + block([("get_weather", {"city": "Beijing"}), ("get_weather", {"city": "Shanghai"})])
        + "</answer>",
        [("get_weather", {"city": "Beijing"}), ("get_weather", {"city": "Shanghai"})],
        reasoning="",
        source=MODEL,
    ),
    _case(
        "answer_with_role_label",
        "<think>\nNo tool is needed.\n</think>\n" + _answer("助手：Beijing is sunny."),
        [],
        "Beijing is sunny.",
        reasoning="No tool is needed.",
        source=MODEL,
    ),
    _case(
        "call_in_reasoning_is_not_run",
        "<think>\nI might write "
        + block([("ping", {})])
        + " later.\n</think>\n"
        + _answer("助手：No call needed."),
        [],
        "No call needed.",
        reasoning="I might write " + block([("ping", {})]) + " later.",
        source=MODEL,
    ),
]

WRITER = Writer(
    block=block,
    think=lambda t: f"<think>\n{t}\n</think>\n",
    answer=lambda t: _answer(f"助手：{t}"),
    say=lambda t: t + " ",
    eos="<|eos|>",
    marker=CLOSE,
    broken=f'{OPEN}[{{"name": "get_weather", "arguments": {BAD}}}]{CLOSE}',
    separator="\n",
    result="<|eos|><tool_response>pong</tool_response>",
    call_end=CLOSE,
    extra=[*CASES, *HY_CASES],
)
WRITERS = {"hunyuan": WRITER}
