"""ERNIE 4.5 (`<tool_call>{…}</tool_call>`, `<think>`, `<response>`), and the outputs and
calls of vLLM's ernie45 parser tests (test_ernie45_moe_tool_parser.py), put on the corpus's
tools (get_current_temperature on get_weather, get_temperature_unit on get_time)."""

from __future__ import annotations

import json
from typing import Any

from tests.proxy.upstreams.emulation.families import BAD, Calls, Writer

OPEN, CLOSE = "<tool_call>", "</tool_call>"
VLLM = "vLLM tests/tool_parsers/test_ernie45_moe_tool_parser.py"


def block(calls: Calls) -> str:
    """One block per call, one per line."""
    return "\n".join(
        f"{OPEN}\n{json.dumps({'name': n, 'arguments': a}, ensure_ascii=False)}\n{CLOSE}"
        for n, a in calls
    )


def _case(tag: str, text: str, calls: list[Any], content: str | None = "", **kw: Any) -> dict:
    return {"tag": tag, "source": VLLM, "text": text, "calls": calls, "content": content, **kw}


BEIJING = ("get_weather", {"location": "Beijing"})
GUANGZHOU = ("get_time", {"location": "Guangzhou", "unit": "c"})
TWO = (
    f'{OPEN}\n{{"name": "get_weather", "arguments": {{"location": "Beijing"}}}}\n{CLOSE}\n'
    f'{OPEN}\n{{"name": "get_time", "arguments": {{"location": "Guangzhou", "unit": "c"}}}}\n'
    f"{CLOSE}\n"
)
THOUGHT = "I need to call two tools to handle these two issues separately."
CASES = [
    _case("vllm_no_tools", "This is a test", [], "This is a test"),
    _case(
        "vllm_single_tool_call",
        f'{OPEN}\n{{"name": "get_weather", "arguments": {{"location": "Beijing"}}}}\n{CLOSE}\n',
        [BEIJING],
    ),
    _case("vllm_multiple_tool_calls", TWO, [BEIJING, GUANGZHOU]),
    _case(
        "vllm_content_before_prefilled_think",
        f"{THOUGHT}\n</think>\n{TWO}",
        [BEIJING, GUANGZHOU],
        f"{THOUGHT}\n</think>",
    ),
    _case(
        "think_block_then_calls",
        f"<think>\n{THOUGHT}\n</think>\n\n\n{TWO}",
        [BEIJING, GUANGZHOU],
        reasoning=THOUGHT,
        source="ERNIE-4.5-Thinking output layout (vLLM ernie45 parser docstring)",
    ),
    _case(
        "think_then_response_block",
        "<think>\nNo tool needed.\n</think>\n\n<response>\nParis is sunny.\n</response>",
        [],
        "Paris is sunny.",
        reasoning="No tool needed.",
        source="ERNIE-4.5-Thinking output layout",
    ),
]

WRITERS = {
    "ernie": Writer(
        block=block,
        think=lambda t: f"<think>\n{t}\n</think>\n\n",
        answer=lambda t: f"<response>\n{t}\n</response>",
        say=lambda t: t + "\n",
        eos="<|end_of_sentence|>",
        marker=CLOSE,
        broken=f'{OPEN}\n{{"name": "get_weather", "arguments": {BAD}}}\n{CLOSE}',
        separator="\n",
        result="\n<tool_output>\npong\n</tool_output>",
        call_end=f"\n{CLOSE}",
        extra=CASES,
    )
}
