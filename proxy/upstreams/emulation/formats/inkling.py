"""`inkling`: Inkling's typed content blocks, every marker a special token.

    <|content_thinking|>The user wants the weather.<|end_message|>
    <|message_model|>get_weather<|content_invoke_tool_json|>{"name": "get_weather",
    "args": {"city": "Paris"}}<|end_message|><|content_model_end_sampling|>

(on one line). A reply is a run of blocks after the prompt's `<|message_model|>`: reasoning
(`<|content_thinking|>`), text (`<|content_text|>`), and calls, one JSON object per block
with its arguments under `args`. The tool's name may stand between the role and the content
marker; it is a header, never content. Tools are declared as a JSON array, results come back
as tool messages (`<|message_tool|>NAME<|content_text|>…`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..rewriting import Rewritten
from ..scanning import BodyScanner, QuotedScanner, neutralise_tokens, partial_overlap
from ..toolspecs import ToolSpecs
from .base import KEEP_SPECIAL_TOKENS, CallText, catalog_tools, json_text
from .json_calls import Shape, decoder

MODEL, TOOL = "<|message_model|>", "<|message_tool|>"
TEXT, THINKING = "<|content_text|>", "<|content_thinking|>"
INVOKE, INVOKE_TEXT = "<|content_invoke_tool_json|>", "<|content_invoke_tool_text|>"
ERROR, END_SAMPLING = "<|content_tool_error|>", "<|content_model_end_sampling|>"
END = "<|end_message|>"
TOKENS = (MODEL, TOOL, TEXT, THINKING, INVOKE, INVOKE_TEXT, ERROR, END_SAMPLING, END)
_CONTENT = "<|content_"
_HEADER = re.compile(rf"(?:{re.escape(MODEL)})+[\w.:\-]{{0,64}}(?={re.escape(_CONTENT)})")
_NAME = re.compile(r"[\w.:\-]{0,64}")
_PROMPT = """# Tools

The following tools are declared, as a JSON array:
{tools}

To call a tool, write a tool block: the tool's name, then the call as one JSON object whose \
arguments are under "args", then the end of the block:
{model}get_weather{invoke}{{"name": "get_weather", "args": {{"city": "Paris"}}}}{end}
{parallel}
If no tool is needed, answer in a text block. Results come back as tool messages; never \
write them yourself."""


class Inkling:
    """Inkling: JSON calls in `<|content_invoke_tool_json|>` blocks."""

    name = "inkling"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = (TOOL, "<|message_user|>")
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = None
    """The template does not open a thinking block: the model writes its own."""

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tools as a JSON array, then the block a call is written in."""
        tools = [tool["function"] for tool in catalog_tools(catalog)]
        line = (
            "You may write several tool blocks, one call each."
            if parallel
            else "Write at most one tool block per reply."
        )
        return _PROMPT.format(
            tools=json_text(tools, TOKENS), model=MODEL, invoke=INVOKE, end=END, parallel=line
        )

    def render_calls(self, calls: list[CallText]) -> str:
        """One tool block per call, its name as the header."""
        return "".join(
            f"{MODEL}{name}{INVOKE}{json_text({'name': name, 'args': arguments}, TOKENS)}{END}"
            for name, arguments in calls
        )

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """A tool message per result, in call order."""
        return "".join(
            f"{TOOL}{name}{TEXT}{neutralise_tokens(content, TOKENS)}{END}"
            for name, content in results
        )

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """Calls in tool blocks; a leading thinking block is reasoning; the other block
        markers carry nothing; a tool-name header goes before anything is read."""
        envelope = Envelope(INVOKE, END, _scanner)
        inner = TaggedParser(
            specs,
            decoder(Shape.OBJECT, key="args"),
            [envelope],
            strict=strict,
            stops=self.stops,
            drop=(MODEL, TEXT, END, END_SAMPLING, INVOKE_TEXT, ERROR),
        )
        thinking = ThinkingParser(inner, open=THINKING, close=END)
        return Rewritten(thinking, lambda text: _HEADER.sub("", text), _held, prefix=MODEL)


def _scanner(lenient: bool) -> BodyScanner:
    # A new block's marker outside strings: the model forgot to end the call's block.
    return QuotedScanner(END, ends=(MODEL, END_SAMPLING) if lenient else ())


def _held(buf: str) -> int:
    """Where the role markers before a header that may still be forming begin (len: none)."""
    start = buf.rfind(MODEL)
    if start >= 0:
        rest = buf[start + len(MODEL) :]
        name = _NAME.match(rest)
        assert name is not None
        tail = rest[name.end() :]
        content = len(tail) < len(_CONTENT) and _CONTENT.startswith(tail)
        role = not name.end() and MODEL.startswith(tail)
        if name.end() < 64 and (content or role):
            return _run_start(buf, start)
    return len(buf) - partial_overlap(buf, MODEL)


def _run_start(buf: str, start: int) -> int:
    """The start of the run of role markers that ends with the one at `start`."""
    while start >= len(MODEL) and buf.startswith(MODEL, start - len(MODEL)):
        start -= len(MODEL)
    return start
