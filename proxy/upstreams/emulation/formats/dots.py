"""`dots`: dots.llm's tool calls, `invoke` elements in a `<dots_function_call>` block.

    <dots_function_call>
    <invoke name="get_weather">
    <parameter name="city">Paris</parameter>
    <parameter name="days">2</parameter>
    </invoke>
    </dots_function_call>

A block holds one or more invokes, or (a fallback the peers read too) one JSON call object.
Invokes are MiniMax M2's syntax, read by xml.py: values are raw text read by the tool's
schema (a string as written, other types as JSON), and may hold any text but `</parameter>`,
the block's end marker included. An invoke of a
tool not offered is left out when the block calls offered ones; a block the length limit cut
runs the invokes the model completed and went on from. A stray end marker in prose carries nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded
from ..scanning import BodyScanner
from ..toolspecs import ToolSpecs
from .base import THINK_TAGS, CallText, response_blocks
from .json_calls import Shape, decoder
from .pythonic import known_only
from .xml import Tags, decode_functions

OPEN, CLOSE = "<dots_function_call>", "</dots_function_call>"
INVOKES = Tags(
    function="<invoke name=",
    function_end="</invoke>",
    parameter="<parameter name=",
    parameter_end="</parameter>",
    lines=False,
)
"""MiniMax M2's invoke syntax, which dots.llm writes too (xml.py reads both)."""
_JSON = decoder(Shape.OBJECT)
_PROMPT = """# Tools

You may call one or more functions to assist with the user query. The functions, as JSON \
signatures:
{catalog}

To call functions, write one {open} block holding an invoke per call:
{open}
<invoke name="FUNCTION_NAME">
<parameter name="PARAMETER_NAME">PARAMETER_VALUE</parameter>
...
</invoke>
{close}
Write strings as they are, with no quotes; write numbers, booleans, lists and objects as \
JSON. {parallel}
If no function is needed, answer normally. Results come back in <tool_response> blocks; never \
write one yourself."""


class Dots:
    """dots.llm: invokes with raw parameter values in a `<dots_function_call>` block."""

    name = "dots"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<tool_response>",)
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tool block: JSON signatures, then the invoke syntax."""
        line = (
            "You may put several invokes in the block."
            if parallel
            else "Put at most one invoke in the block."
        )
        return _PROMPT.format(catalog=catalog, open=OPEN, close=CLOSE, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One block, an invoke per call, a parameter per argument."""
        invokes = "".join(f"{INVOKES.render(name, arguments)}\n" for name, arguments in calls)
        return f"{OPEN}\n{invokes}{CLOSE}"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order."""
        return response_blocks(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser per block; invokes read by the tools' schemas."""

        def decode(body: str, lenient: bool) -> Decoded | None:
            return _decode(body, lenient, specs, partial=False)

        def completed(body: str, lenient: bool) -> Decoded | None:
            return _decode(body, lenient, specs, partial=True)

        envelope = Envelope(OPEN, CLOSE, _scanner, finished=known_only(completed, specs))
        inner = TaggedParser(
            specs,
            known_only(decode, specs),
            [envelope],
            strict=strict,
            stops=self.stops,
            drop=(CLOSE,),
        )
        return ThinkingParser(inner)


def _scanner(lenient: bool) -> BodyScanner:
    # Outside values, a new block means the model forgot to close the previous one.
    return INVOKES.scanner(CLOSE, ends=(OPEN,))(lenient)


def _decode(body: str, lenient: bool, specs: ToolSpecs, *, partial: bool) -> Decoded | None:
    """The invokes (`partial`: those the model completed and went on from before a cut), or
    one JSON call object."""
    if not body.lstrip().startswith(INVOKES.function):
        return None if partial else _JSON(body, lenient)
    if partial:
        end = body.rfind(INVOKES.function_end)
        if end < 0 or not body[end + len(INVOKES.function_end) :].strip():
            return None  # the last invoke counts once the model went on past it
        body = body[: end + len(INVOKES.function_end)]
    return decode_functions(body, lenient, specs, INVOKES)
