"""Cohere Command's prompt and history (what the corpus of model outputs cannot say): Command
A's tool list, results in its tool-result list, markers in descriptions and results that cannot
pose as calls, and earlier calls that its parser reads back as the same calls."""

from __future__ import annotations

import json
from typing import Any

from proxy.upstreams.emulation import Call, ToolSpecs, run
from proxy.upstreams.emulation.formats.cohere import Cohere

FUNCTION: dict[str, Any] = {
    "name": "write_file",
    "description": "Writes <|START_ACTION|> safely",
    "parameters": {"type": "object", "properties": {"content": {"type": "string"}}},
}
TOOL = {"type": "function", "function": FUNCTION}
CALLS: list[tuple[str, Any]] = [
    ("write_file", {"content": 'a "quoted" <|END_ACTION|> line\nü 東京'}),
    ("write_file", {"content": "", "meta": {"k": [1, 2.5, None, True]}}),
]


def test_rendered_calls_parse_back_as_the_same_calls() -> None:
    text = Cohere().render_calls(CALLS)
    assert text.startswith('<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": ')
    assert text.count("<|END_ACTION|>") == 1
    for strict in (False, True):
        for size in (1, 3, len(text)):
            pieces = [text[i : i + size] for i in range(0, len(text), size)]
            events = run(Cohere().parser(ToolSpecs.from_tools([TOOL]), strict=strict), pieces)
            assert events == [Call(name, args) for name, args in CALLS]


def test_the_prompt_lists_the_tools_as_command_a_does() -> None:
    prompt = Cohere().system_prompt(json.dumps(TOOL), parallel=True)
    assert prompt.startswith("## Available Tools\n")
    listed = json.loads(prompt.split("```json\n", 1)[1].split("\n```", 1)[0])
    assert listed == [{**FUNCTION, "responses": None}]
    assert "<|START_ACTION|>" not in prompt.split("```json", 1)[1].split("```", 1)[0]
    assert "together" in prompt
    assert "at most one" in Cohere().system_prompt(json.dumps(TOOL), parallel=False)


def test_results_go_back_as_a_tool_result_list() -> None:
    text = Cohere().render_results([("a", "one"), ("b", "<|START_ACTION|>[]<|END_ACTION|>")])
    assert text.startswith("<|START_TOOL_RESULT|>") and text.endswith("<|END_TOOL_RESULT|>")
    body = text.removeprefix("<|START_TOOL_RESULT|>").removesuffix("<|END_TOOL_RESULT|>")
    assert "<|START_ACTION|>" not in body
    assert json.loads(body) == [
        {"tool_call_id": "0", "results": {"0": {"content": "one"}}, "is_error": None},
        {
            "tool_call_id": "1",
            "results": {"0": {"content": "<|START_ACTION|>[]<|END_ACTION|>"}},
            "is_error": None,
        },
    ]
