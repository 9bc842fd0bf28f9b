"""`ernie`: ERNIE 4.5's calls, Hermes's JSON objects in `<tool_call>` tags.

    <think>
    The user wants the weather.
    </think>

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>

One block per call. The thinking models open their reply with a `<think>` block (the template
may open it itself: then the reply starts inside it, and without thinking turned on the text up
to `</think>` is content, as vLLM gives it); an answer may sit in `<response>…</response>`,
tags that carry nothing. The tools are listed as JSON lines, results come back in
`<tool_output>` blocks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..toolspecs import ToolSpecs
from .base import THINK_TAGS, CallText, neutralise, parallel_line
from .json_calls import Shape, decoder
from .marked_json import render_blocks, tag_envelope

OPEN, CLOSE = "<tool_call>", "</tool_call>"
RESULT_OPEN, RESULT_CLOSE = "<tool_output>", "</tool_output>"
RESPONSE = ("<response>", "</response>")
_PROMPT = """## Tools

You can call the functions below. Each is given as a JSON signature:
{catalog}

To call a function, write its name and arguments as one JSON object inside {open}{close} tags:
{open}
{{"name": <function-name>, "arguments": <args-json-object>}}
{close}
{parallel}
If no function is needed, answer normally. Results come back in {result} blocks; never write \
one yourself."""


class Ernie:
    """ERNIE 4.5: Hermes-style JSON calls, `<think>` and `<response>` blocks."""

    name = "ernie"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = (RESULT_OPEN, "<tool_response>")
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tool section: JSON signatures, then how to call."""
        return _PROMPT.format(
            catalog=catalog,
            open=OPEN,
            close=CLOSE,
            parallel=parallel_line(parallel, OPEN),
            result=RESULT_OPEN,
        )

    def render_calls(self, calls: list[CallText]) -> str:
        """One `<tool_call>` block per call."""
        return render_blocks(calls, OPEN, CLOSE, ())

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_output>` blocks in call order, tool markers inside neutralised."""
        return "\n".join(
            f"{RESULT_OPEN}\n{neutralise(content)}\n{RESULT_CLOSE}" for _, content in results
        )

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser reading JSON bodies; the `<response>` tags are dropped."""
        inner = TaggedParser(
            specs,
            decoder(Shape.OBJECT),
            [tag_envelope(OPEN, CLOSE)],
            strict=strict,
            stops=self.stops,
            drop=RESPONSE,
        )
        return ThinkingParser(inner)
