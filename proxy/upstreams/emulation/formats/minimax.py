"""`minimax`: MiniMax's tool calls. The family's name reads every version's syntax: M2, M2.1 and
M2.5's invokes in `<minimax:tool_call>`,

    <minimax:tool_call>
    <invoke name="get_weather">
    <parameter name="city">Paris</parameter>
    </invoke>
    </minimax:tool_call>

with values inline and kept as written (then converted by the tool's schema: formats/xml.py
reads them), M3's namespaced elements (formats/minimax_m3.py) and M1's JSON call objects,
one per line in `<tool_calls>` (formats/json_calls.py). Each invoke is read as one call, so
an unknown or broken one stays text without taking its neighbours with it; the block markers
around them carry nothing. `minimax` prompts in M2's syntax, `minimax-m3` in M3's.
Reasoning is a leading `<think>` block, which the template opens itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded
from ..scanning import BodyScanner, QuotedScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from . import json_calls, minimax_m3
from .base import KEEP_SPECIAL_TOKENS, THINK_TAGS, CallText, catalog_tools, json_text
from .minimax_m3 import NS
from .xml import Tags, decode_functions

OPEN, CLOSE = "<minimax:tool_call>", "</minimax:tool_call>"
M2 = Tags(
    function="<invoke name=",
    function_end="</invoke>",
    parameter="<parameter name=",
    parameter_end="</parameter>",
    lines=False,
)
M1_OPEN, M1_CLOSE = "<tool_calls>", "</tool_calls>"
TURN, END = "]~b]", "[e~["
"""A role header (a tool's turn the model writes itself) and the end of a message."""
TOKENS = (OPEN, CLOSE, TURN, END, NS)
_RESULT_TAGS = ("<response>", "</response>")
_PROMPT = """# Tools
You may call one or more tools to assist with the user query.
Here are the tools available in JSONSchema format:

<tools>
{tools}
</tools>

When making tool calls, use XML format to invoke tools and pass parameters:

{example}
{parallel}
Results come back in <response> blocks; never write one yourself."""
_M2_EXAMPLE = f"""{OPEN}
<invoke name="tool-name-1">
<parameter name="param-key-1">param-value-1</parameter>
<parameter name="param-key-2">param-value-2</parameter>
...
</invoke>
{CLOSE}

Write each value as it is, with no quotes or escaping; lists and objects as JSON."""
_M3_EXAMPLE = f"""{minimax_m3.TOOL_CALL}
{minimax_m3.INVOKE}"tool-name-1">
{NS}<param-key-1>param-value-1{NS}</param-key-1>
{NS}<param-key-2>{NS}<key>value{NS}</key>{NS}</param-key-2>
{NS}<param-key-3>{NS}<item>first{NS}</item>{NS}<item>second{NS}</item>{NS}</param-key-3>
{minimax_m3.INVOKE_END}
{minimax_m3.TOOL_CALL_END}

Write each value as it is, with no quotes or escaping: an object as one element per key, a \
list as one <item> element per member."""


class MiniMax:
    """MiniMax M2/M2.1/M2.5: invokes in a `<minimax:tool_call>` block; reads M3's too."""

    name = "minimax"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = (TURN,)
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """M2's tool section: a `<tool>` per schema, then the invoke syntax."""
        return _prompt(catalog, _M2_EXAMPLE, parallel, OPEN)

    def render_calls(self, calls: list[CallText]) -> str:
        """One block, an invoke per call."""
        invokes = "".join(f"{M2.render(name, arguments)}\n" for name, arguments in calls)
        return f"{OPEN}\n{invokes}{CLOSE}"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """A `<response>` per result, in call order."""
        return _responses(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """Every version's invokes."""
        return minimax_parser(specs, strict=strict)


class MiniMaxM3:
    """MiniMax M3: namespaced elements; reads M2's invokes too."""

    name = "minimax-m3"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = (TURN,)
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """M3's tool section: the schemas, then the namespaced syntax."""
        return _prompt(catalog, _M3_EXAMPLE, parallel, minimax_m3.TOOL_CALL)

    def render_calls(self, calls: list[CallText]) -> str:
        """One block, an invoke per call, an element per argument."""
        invokes = "".join(
            f'{minimax_m3.INVOKE}"{name}">'
            + minimax_m3.render(
                arguments if isinstance(arguments, dict) else {"arguments": arguments}
            )
            + f"{minimax_m3.INVOKE_END}\n"
            for name, arguments in calls
        )
        return f"{minimax_m3.TOOL_CALL}\n{invokes}{minimax_m3.TOOL_CALL_END}"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """A `<response>` per result, in call order."""
        return _responses(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """Every version's invokes."""
        return minimax_parser(specs, strict=strict)


def minimax_parser(specs: ToolSpecs, *, strict: bool) -> Parser:
    """M2's and M3's invokes, one call each, and M1's block of JSON calls, after a `<think>`
    block."""
    m1 = json_calls.decoder(json_calls.Shape.LINES)

    def decode(body: str, lenient: bool) -> Decoded | None:
        # M2's invoke keeps its markers (xml.py reads them); M3's comes without, so does M1's.
        if body.startswith(M2.function):
            return decode_functions(body, lenient, specs, M2)
        if body.lstrip()[:1] in ("{", "["):
            return m1(body, lenient)
        return minimax_m3.decode(body, lenient, specs)

    envelopes = [
        Envelope(M2.function, M2.function_end, _m2_scanner, keep_markers=True),
        Envelope(minimax_m3.INVOKE, minimax_m3.INVOKE_END, _m3_scanner),
        Envelope(M1_OPEN, M1_CLOSE, _m1_scanner),
    ]
    drop = (OPEN, CLOSE, minimax_m3.TOOL_CALL, minimax_m3.TOOL_CALL_END, END)
    inner = TaggedParser(specs, decode, envelopes, strict=strict, stops=(TURN,), drop=drop)
    return minimax_m3.TightMarkers(ThinkingParser(inner))


def _m2_scanner(lenient: bool) -> BodyScanner:
    # Outside values, the block's end means the invoke was left open.
    return M2.scanner(M2.function_end, ends=(CLOSE,))(lenient)


def _m1_scanner(lenient: bool) -> BodyScanner:
    return QuotedScanner(M1_CLOSE, ends=(M1_OPEN,) if lenient else ())


def _m3_scanner(lenient: bool) -> BodyScanner:
    ends = (minimax_m3.INVOKE, minimax_m3.TOOL_CALL_END) if lenient else ()
    return minimax_m3.MarkerScanner(minimax_m3.INVOKE_END, *ends)


def _prompt(catalog: str, example: str, parallel: bool, block: str) -> str:
    tools = "\n".join(
        f"<tool>{json_text(tool['function'], TOKENS)}</tool>" for tool in catalog_tools(catalog)
    )
    return _PROMPT.format(
        tools=neutralise_tokens(tools, (*TOKENS, *_RESULT_TAGS)),
        example=example,
        parallel=f"You may invoke several tools in one {block} block."
        if parallel
        else "Invoke at most one tool per reply.",
    )


def _responses(results: list[tuple[str, str]]) -> str:
    return "\n".join(
        f"<response>{neutralise_tokens(content, (*TOKENS, *_RESULT_TAGS))}</response>"
        for _, content in results
    )
