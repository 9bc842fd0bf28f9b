"""`minicpm`: MiniCPM's XML calls (MiniCPM 4.1 and 5's templates), one bare function tag each.

    <function name="get_weather"><param name="city">Paris</param></function>

Values are inline and kept as written (a `<![CDATA[…]]>` section unwrapped), then converted by
the tool's schema (formats/xml.py reads the tags). Servers that decode MiniCPM's byte-level
tokens without joining them leave `Ġ` for a space and `Ċ` for a newline, and may collapse
`<function name=` into `<functionname=`: both are read as the model meant them. Reasoning is
a leading `<think>` block.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..filters import FilteredText
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded
from ..toolspecs import ToolSpecs
from .base import THINK_TAGS, CallText, parallel_line, response_blocks
from .xml import Tags, decode_functions

MINICPM = Tags(
    function="<function name=",
    function_end="</function>",
    parameter="<param name=",
    parameter_end="</param>",
    lines=False,
    cdata=True,
)
COLLAPSED = {"<functionname=": MINICPM.function, "<paramname=": MINICPM.parameter}
"""Tags whose space the server's decoding lost."""
_BYTE_LEVEL = str.maketrans({"\u0120": " ", "\u010a": "\n"})
_PROMPT = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{catalog}
</tools>

To call a function, write it in this format:
<function name="example_function_name"><param name="example_parameter_1">value_1</param>\
<param name="example_parameter_2"><![CDATA[a value
that spans lines]]></param></function>
Write each value as it is, with no quotes or escaping; lists and objects as JSON.
{parallel}
Never write <tool_response> yourself; results will be provided to you."""


class MiniCpm:
    """MiniCPM: bare `<function name=…>` tags holding `<param name=…>` values."""

    name = "minicpm"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<tool_response>",)
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """MiniCPM's tool block."""
        return _PROMPT.format(catalog=catalog, parallel=parallel_line(parallel, "<function>"))

    def render_calls(self, calls: list[CallText]) -> str:
        """One function tag per call."""
        return "\n".join(MINICPM.render(name, arguments) for name, arguments in calls)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order."""
        return response_blocks(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """Function tags anywhere in the reply (collapsed ones too), after a `<think>` block."""

        def decode(body: str, lenient: bool) -> Decoded | None:
            for collapsed, tag in COLLAPSED.items():
                body = body.replace(collapsed, tag)
            return decode_functions(body, lenient, specs, MINICPM)

        scanner = MINICPM.scanner(MINICPM.function_end)
        envelopes = [
            Envelope(opener, MINICPM.function_end, scanner, keep_markers=True)
            for opener in (MINICPM.function, "<functionname=")
        ]
        inner = TaggedParser(specs, decode, envelopes, strict=strict, stops=self.stops)
        # Byte-level decoding's stand-ins (`Ġ`, `Ċ`) read as the space and newline they are.
        return FilteredText(ThinkingParser(inner), ready=len, rewrite=_byte_level)


def _byte_level(text: str) -> str:
    return text.translate(_BYTE_LEVEL)
