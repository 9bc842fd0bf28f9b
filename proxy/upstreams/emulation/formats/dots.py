"""`dots`: dots.llm's tool calls, `invoke` elements in a `<dots_function_call>` block.

    <dots_function_call>
    <invoke name="get_weather">
    <parameter name="city">Paris</parameter>
    <parameter name="days">2</parameter>
    </invoke>
    </dots_function_call>

A block holds one or more invokes, or (a fallback the peers read too) one JSON call object.
Values are raw text read by the tool's schema (a string as written, other types as JSON); a
value may hold any text but `</parameter>`, the block's end marker included. An invoke of a
tool not offered is left out when the block calls offered ones; a block the length limit cut
runs the invokes the model completed and went on from. A stray end marker in prose carries nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, Repair
from ..scanning import BodyScanner, XmlScanner
from ..toolspecs import ToolSpecs
from ..values import typed_arguments
from .base import THINK_TAGS, CallText, response_blocks
from .json_calls import Shape, decoder
from .pythonic import known_only

OPEN, CLOSE = "<dots_function_call>", "</dots_function_call>"
_VALUE = ("<parameter name=", "</parameter>")
_INVOKE = re.compile(r"\s*<invoke\s+name\s*=\s*([^>]+)>")
_PARAMETER = re.compile(r"\s*<parameter\s+name\s*=\s*([^>]+)>(.*?)</parameter>", re.DOTALL)
_INVOKE_END = re.compile(r"\s*</invoke>")
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
        invokes = []
        for name, arguments in calls:
            params = arguments if isinstance(arguments, dict) else {"arguments": arguments}
            lines = "".join(
                f'<parameter name="{key}">{_raw(value)}</parameter>\n'
                for key, value in params.items()
            )
            invokes.append(f'<invoke name="{name}">\n{lines}</invoke>\n')
        return f"{OPEN}\n{''.join(invokes)}{CLOSE}"

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


def _raw(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _scanner(lenient: bool) -> BodyScanner:
    # Outside values, a new block means the model forgot to close the previous one.
    return XmlScanner(CLOSE, ends=(OPEN,) if lenient else (), value=_VALUE)


def _decode(body: str, lenient: bool, specs: ToolSpecs, *, partial: bool) -> Decoded | None:
    """Invokes (`partial`: the ones completed before a cut), or one JSON call object."""
    if not body.lstrip().startswith("<invoke"):
        return None if partial else _JSON(body, lenient)
    repairs: list[Repair] = []
    calls: list[tuple[str, Any]] = []
    pos = 0
    while (head := _INVOKE.match(body, pos)) is not None:
        name = _unquoted(head.group(1))
        raw: dict[str, str] = {}
        pos = head.end()
        while (param := _PARAMETER.match(body, pos)) is not None:
            key = _unquoted(param.group(1))
            if not key or key in raw:
                return None
            raw[key] = param.group(2)
            pos = param.end()
        end = _INVOKE_END.match(body, pos)
        if end is None:
            break
        parameters = specs.parameters(name)
        calls.append((name, typed_arguments(raw, parameters, lenient, repairs)))
        pos = end.end()
    rest = body[pos:].strip()
    if partial and not rest:
        calls = calls[:-1]  # the last invoke counts once the model went on past it
    if not calls or (rest and not partial):
        return None
    return calls, repairs


def _unquoted(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text
