"""The seam every emulated format implements, and the text helpers they share."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Protocol

from ..call_ids import CallIds
from ..parser import Parser
from ..toolspecs import ToolSpecs

_MARKER = re.compile(r"<(?=/?(?:tool_call|tool_response|tools|function|parameter)\b)", re.I)

KEEP_SPECIAL_TOKENS: Mapping[str, Any] = {"skip_special_tokens": False}
THINK_TAGS = ("<think>", "</think>")
CallText = tuple[str, Any]
"""A call in the history: (name, arguments object, or the raw string if not JSON)."""


class EmulationFormat(Protocol):
    """How tools are described to a model, how its calls are written and read back."""

    name: str
    stops: tuple[str, ...]
    """Stop strings added to the request, so a model cannot write its own tool results."""
    think_tags: tuple[str, str] | None
    """The tags of the family's reasoning block (None: reasoning has no block, as in harmony),
    used when the request turns thinking on and the template may have opened the block."""
    request_fields: Mapping[str, Any]
    """Fields added to the request unless the client set them: `skip_special_tokens: false`
    where the family's markers are special tokens, which vLLM and SGLang strip by default."""
    call_ids: CallIds
    """The ids of the calls parsed from the text (the family's own where its template
    cares, as the server's template renders them back in parsed mode)."""

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tool block: the catalog and how to call; identical bytes for identical input."""
        ...

    def render_calls(self, calls: list[CallText]) -> str:
        """Earlier calls of the assistant, in the format's own text."""
        ...

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """Tool results (name, content) as the text of one user message."""
        ...

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A fresh parser for one answer."""
        ...


def neutralise(text: str) -> str:
    """Escape tool markers in text the model did not write, so it cannot pose as a call."""
    return _MARKER.sub("&lt;", text)


def response_blocks(results: list[tuple[str, str]]) -> str:
    """Results in Hermes/Qwen `<tool_response>` blocks, markers inside neutralised."""
    return "\n".join(
        f"<tool_response>\n{neutralise(content)}\n</tool_response>" for _, content in results
    )


def parallel_line(parallel: bool, block: str) -> str:
    """The sentence that allows or forbids several calls in one reply."""
    if parallel:
        return f"You may write several {block} blocks in one reply."
    return f"Write at most one {block} block per reply."


def catalog_tools(catalog: str) -> list[dict[str, Any]]:
    """The catalog's tools back as objects (`{"type": "function", "function": {…}}`), for
    formats that lay them out their own way (a JSON array, TypeScript, indented JSON)."""
    return [json.loads(line) for line in catalog.splitlines() if line.strip()]


def json_text(value: Any, tokens: tuple[str, ...] = (), **options: Any) -> str:
    """`value` as JSON whose strings cannot hold a family's markers: the first character of
    each marker is written as a JSON escape (`<|` becomes `\\u003c|`), which the model reads
    as the same text."""
    return escape_tokens(json.dumps(value, ensure_ascii=False, **options), tokens)


def escape_tokens(text: str, tokens: tuple[str, ...]) -> str:
    """Quoted JSON or Python text with the first character of each marker written as a
    `\\uXXXX` escape, which both languages read back as the same string."""
    for token in tokens:
        if token in text:
            text = text.replace(token, f"\\u{ord(token[0]):04x}" + token[1:])
    return text
