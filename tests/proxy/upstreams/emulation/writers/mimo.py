"""Xiaomi MiMo (Qwen3-Coder's tags, values inline and verbatim), the compact calls of vLLM's
MiMo structural-tag tests (test_structural_tag_registry.py: run(n) on get_weather's days), and
the peers' Qwen3-Coder cases with MiMo's inline values."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tests.proxy.upstreams.emulation.families import XML
from tests.proxy.upstreams.emulation.xml_syntax_cases import blocks, qwen3_coder_cases

PEER = "vLLM test_structural_tag_registry.py (test_mimo_strict_compact_xml)"
SGLANG = "SGLang mimo_detector.py"


def _case(tag: str, source: str, text: str, calls: list[Any], content: str | None = "") -> dict:
    return {"tag": tag, "source": source, "text": text, "calls": calls, "content": content}


COMPACT = "<tool_call><function=get_weather><parameter=days>2</parameter></function></tool_call>"
MIMO = [
    _case("compact_call", PEER, COMPACT, [["get_weather", {"days": 2}]]),
    _case(
        "compact_calls_twice",
        PEER,
        COMPACT * 2,
        [["get_weather", {"days": 2}], ["get_weather", {"days": 2}]],
    ),
    _case(
        "compact_unknown_function",
        PEER,
        COMPACT.replace("function=get_weather", "function=unknown"),
        [],
        None,
    ),
    _case(
        "whitespace_kept_verbatim",
        "vLLM parser/mimo.py (verbatim string values)",
        "<tool_call>\n<function=write_file>\n<parameter=path>a.py</parameter>\n"
        "<parameter=content>\n    return 1\n</parameter>\n</function>\n</tool_call>",
        [["write_file", {"path": "a.py", "content": "\n    return 1\n"}]],
    ),
    _case(
        "typed_values_inline",
        SGLANG,
        "<tool_call>\n<function=set_flags>\n<parameter=enabled>true</parameter>\n"
        '<parameter=ratio>0.5</parameter>\n<parameter=tags>["a", "b"]</parameter>\n'
        '<parameter=meta>{"k": 1}</parameter>\n<parameter=note>null</parameter>\n'
        "</function>\n</tool_call>",
        [
            [
                "set_flags",
                {"enabled": True, "ratio": 0.5, "tags": ["a", "b"], "meta": {"k": 1}, "note": None},
            ]
        ],
    ),
    _case(
        "think_then_compact_call",
        PEER,
        "<think>plan</think>" + COMPACT,
        [["get_weather", {"days": 2}]],
    ),
]

WRITER = replace(
    XML,
    block=lambda calls: blocks(calls, "<tool_call>", "</tool_call>", lines=False),
    extra=[*MIMO, *qwen3_coder_cases("<tool_call>", "</tool_call>", lines=False)],
)

WRITERS = {"mimo": WRITER}
