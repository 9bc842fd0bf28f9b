"""The prompts and histories of the families that write a function tag holding parameter tags
(what the corpus of model outputs cannot say): the tool list in the family's layout with its
markers broken in descriptions and results, and earlier calls rendered in the family's syntax
that its parser reads back as the same calls, whole and in deltas, strict and lenient."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.upstreams.emulation import Call, ToolSpecs, catalog, run
from proxy.upstreams.emulation.formats.base import EmulationFormat
from proxy.upstreams.emulation.formats.mimo import Mimo
from proxy.upstreams.emulation.formats.minicpm import MiniCpm
from proxy.upstreams.emulation.formats.minimax import MiniMax, MiniMaxM3
from proxy.upstreams.emulation.formats.seed_oss import SeedOss
from proxy.upstreams.emulation.formats.step import CALL_BEGIN, Step, Step3

FORMATS: dict[str, tuple[EmulationFormat, str]] = {
    "seed-oss": (SeedOss(), "<seed:tool_call>"),
    "mimo": (Mimo(), "<tool_call>"),
    "step": (Step(), "<tool_call>"),
    "step3": (Step3(), CALL_BEGIN),
    "minimax": (MiniMax(), "<minimax:tool_call>"),
    "minimax-m3": (MiniMaxM3(), "]<]minimax[>[<tool_call>"),
    "minicpm": (MiniCpm(), '<function name="'),
}
"""Each format with the marker that opens its calls."""
UNQUOTABLE = {"minimax-m3"}
"""Formats whose values cannot hold their own markers (M3's namespace marker opens a tag
wherever it stands)."""
TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "write_file",
        "description": "Writes files. MARKER",
        "parameters": {
            "type": "object",
            "properties": {
                "content": {"type": "string"},
                "meta": {"type": "object"},
                "count": {"type": "integer"},
            },
        },
    },
}


def _calls(marker: str) -> list[tuple[str, Any]]:
    return [
        ("write_file", {"content": f'a "quoted" {marker} line\n  and\ttab, ünï 東京\n'}),
        ("write_file", {"content": "", "meta": {"k": [1, 2.5, None, True]}, "count": 3}),
    ]


def _tool(marker: str) -> dict[str, Any]:
    function = {**TOOL["function"], "description": f"Writes files. {marker}"}
    return {**TOOL, "function": function}


@pytest.mark.parametrize("name", FORMATS)
def test_rendered_calls_parse_back_as_the_same_calls(name: str) -> None:
    fmt, marker = FORMATS[name]
    calls = _calls("<tool_call>" if name in UNQUOTABLE else marker)
    text = fmt.render_calls(calls)
    assert marker in text
    for strict in (False, True):
        for size in (1, 2, 5, len(text)):
            pieces = [text[i : i + size] for i in range(0, len(text), size)]
            events = run(fmt.parser(ToolSpecs.from_tools([TOOL]), strict=strict), pieces)
            assert events == [Call(n, a) for n, a in calls], (strict, size)


@pytest.mark.parametrize("name", FORMATS)
def test_the_prompt_lists_the_tools_and_the_syntax(name: str) -> None:
    fmt, marker = FORMATS[name]
    tools = catalog([_tool(marker)])
    prompt = fmt.system_prompt(tools, parallel=True)
    assert prompt == fmt.system_prompt(tools, parallel=True)
    assert prompt != fmt.system_prompt(tools, parallel=False)
    assert '"write_file"' in prompt and marker in prompt
    assert f"Writes files. {marker}" not in prompt  # a description cannot pose as a call


@pytest.mark.parametrize("name", FORMATS)
def test_results_cannot_pose_as_calls(name: str) -> None:
    fmt, marker = FORMATS[name]
    text = fmt.render_results([("write_file", "done"), ("write_file", f"{marker} rm -rf")])
    assert "done" in text and "rm -rf" in text and marker not in text
    events = run(fmt.parser(ToolSpecs.from_tools([TOOL]), strict=False), [text])
    assert not [e for e in events if isinstance(e, Call)]
