"""How NVIDIA Nemotron 3 writes its calls: Qwen3-Coder's `<tool_call>` blocks (vLLM's
nemotron_v3 parser is Qwen3's), so the `xml` writer's layout and the qwen3coder peer cases,
plus what Nemotron's template and parser add: an empty `<think></think>` when thinking is off,
a reply that begins inside a block the template opened, reasoning's trailing blanks."""

from __future__ import annotations

from dataclasses import replace

from tests.proxy.upstreams.emulation.families import XML
from tests.proxy.upstreams.emulation.writers.pairs import case

_VLLM = "vLLM nemotron_v3 parser (Qwen3's format)"
_PARIS = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
    "</tool_call>"
)

CASES = [
    case(
        "empty_think_then_call",
        f"{_VLLM}: thinking off, the template's empty <think></think>",
        "<think></think>" + _PARIS,
        [["get_weather", {"city": "Paris"}]],
    )
    | {"reasoning": ""},
    case(
        "think_with_trailing_blanks",
        f"{_VLLM} (strip_trailing_reasoning_whitespace)",
        "<think>\nThe weather.\n\n</think>\n\n" + _PARIS,
        [["get_weather", {"city": "Paris"}]],
    )
    | {"reasoning": "The weather."},
    case(
        "reasoning_only_answer",
        f"{_VLLM}: reasoning, then a short answer",
        "<think>Easy.</think>\nIt is sunny.",
        [],
        "It is sunny.",
    )
    | {"reasoning": "Easy."},
    case(
        "prose_then_two_calls_inline_values",
        f"{_VLLM}: content, then calls with values on the tag's line",
        "Checking both.\n<tool_call>\n<function=get_weather>\n<parameter=city>Rome</parameter>\n"
        "<parameter=days>2</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=ping>\n"
        "</function>\n</tool_call>",
        [["get_weather", {"city": "Rome", "days": 2}], ["ping", {}]],
        "Checking both.",
    ),
    case(
        "typed_values_by_schema",
        f"{_VLLM}: values converted by the tool's schema",
        "<tool_call>\n<function=set_flags>\n<parameter=enabled>\ntrue\n</parameter>\n"
        '<parameter=ratio>\n0.5\n</parameter>\n<parameter=tags>\n["a"]\n</parameter>\n'
        "</function>\n</tool_call>",
        [["set_flags", {"enabled": True, "ratio": 0.5, "tags": ["a"]}]],
    ),
    case(
        "im_end_after_call",
        f"{_VLLM} (ChatML turn boundaries)",
        _PARIS + "<|im_end|>",
        [["get_weather", {"city": "Paris"}]],
    ),
]

WRITERS = {"nemotron": replace(XML, extra=[*CASES, *XML.extra])}
