"""Llama 3.1's built-in tools: `<|python_tag|>brave_search.call(query="…")` is a call of the
tool named `brave_search` (or `wolfram_alpha`) when the request offers it, and text when it
does not; other code after the tag (the code interpreter's) stays text. Whole and in deltas
of every size from 1 to 7."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.upstreams.emulation import Call, Text, ToolSpecs, get_format, run


def _tool(name: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    return {"type": "function", "function": {"name": name, "parameters": schema}}


OFFERED = [_tool("brave_search"), _tool("wolfram_alpha"), _tool("get_weather")]
CASES = [
    (
        '<|python_tag|>brave_search.call(query="weather in Paris")<|eom_id|>',
        OFFERED,
        [("brave_search", {"query": "weather in Paris"})],
        "",
    ),
    (
        "<|python_tag|>wolfram_alpha.call(query='solve x^2 = 4')",
        OFFERED,
        [("wolfram_alpha", {"query": "solve x^2 = 4"})],
        "",
    ),
    (
        'Searching.\n<|python_tag|>brave_search.call(query="a (b) \\"c\\"")',
        OFFERED,
        [("brave_search", {"query": 'a (b) "c"'})],
        "Searching.",
    ),
    (
        '<|python_tag|>brave_search.call(query="weather in Paris")',
        [_tool("get_weather")],
        [],
        '<|python_tag|>brave_search.call(query="weather in Paris")',
    ),
    (
        "<|python_tag|>import math\nprint(math.sqrt(2))",
        OFFERED,
        [],
        "<|python_tag|>import math\nprint(math.sqrt(2))",
    ),
]


def _read(text: str, tools: list[dict[str, Any]], size: int) -> tuple[str, list[Any]]:
    parser = get_format("llama").parser(ToolSpecs.from_tools(tools), strict=False)
    chunks = [text[i : i + size] for i in range(0, len(text), size)] if size else [text]
    events = run(parser, chunks)
    content = "".join(e.text for e in events if isinstance(e, Text))
    return content.strip(), [(e.name, e.arguments) for e in events if isinstance(e, Call)]


@pytest.mark.parametrize("size", range(8))
@pytest.mark.parametrize(("text", "tools", "calls", "content"), CASES)
def test_a_built_in_tool_call_runs_only_when_offered(
    text: str, tools: list[dict[str, Any]], calls: list[Any], content: str, size: int
) -> None:
    assert _read(text, tools, size) == (content, calls)
