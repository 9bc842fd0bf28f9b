"""`deepseek`: every DeepSeek version's tool calls (V3 / R1, V3.1, V3.2, V4, V4.1).

V3.1 writes `<|tool calls begin|><|tool call begin|>NAME<|tool sep|>{…}<|tool call end|>…
<|tool calls end|>`; V3 and R1 write `function<|tool sep|>NAME` and the arguments in a
```json fence. Both are read; the history is written in the V3.1 form, results as
`<|tool output begin|>…<|tool output end|>`. (Written here with ASCII bars and spaces: the
real markers have U+FF5C bars and U+2581 for each space, as in DeepSeek's tokenizer.)
Reasoning is a leading `<think>` block. The markers are special tokens: the server must keep
them.

V3.2 and V4 write DSML invokes (`deepseek-v3.2`'s syntax, read by formats/dsml.py's decoder) in
a `function_calls` (V3.2) or `tool_calls` (V4) block; V4.1 writes a space after each DSML
token (`<|DSML| calls>`, `<|DSML| invoke name="…">`, `<|DSML| parameter …>`). All of them are
read here too: users name the family, not the template revision.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, Repair, load_value
from ..scanning import BodyScanner, QuotedScanner, XmlScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from .base import KEEP_SPECIAL_TOKENS, THINK_TAGS, CallText, catalog_tools, json_text


def token(name: str) -> str:
    """A DeepSeek marker: `name` between fullwidth bars, its spaces as U+2581."""
    return f"<\uff5c{name.replace(' ', chr(0x2581))}\uff5c>"


CALLS_BEGIN, CALLS_END = token("tool calls begin"), token("tool calls end")
CALL_BEGIN, CALL_END, SEP = token("tool call begin"), token("tool call end"), token("tool sep")
OUTPUT_BEGIN, OUTPUT_END = token("tool output begin"), token("tool output end")
OUTPUTS_BEGIN = token("tool outputs begin")
EOS = token("end of sentence")
TOKENS = (CALLS_BEGIN, CALLS_END, CALL_BEGIN, CALL_END, SEP, OUTPUT_BEGIN, OUTPUT_END)
_PROMPT = """## Tools
You have access to the following tools:

{tools}

IMPORTANT: ALWAYS adhere to this exact format for tool use:
{calls_begin}{call_begin}tool_call_name{sep}tool_call_arguments{call_end}\
{{{{additional_tool_calls}}}}{calls_end}

Where:
- `tool_call_name` must be an exact match to one of the available tools
- `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters Schema
- For multiple tool calls, chain them directly without separators or spaces
{parallel}
If no tool is needed, answer normally. Never write tool outputs yourself."""
# DSML (V3.2 onwards; its parser is dsml.py's, imported where used: dsml.py imports this
# module). V4.1 writes a space after each DSML token.
DSML = "\uff5cDSML\uff5c"
_SPACED = f"{DSML} "
V41_INVOKE, V41_INVOKE_END = f'<{_SPACED}invoke name="', f"</{_SPACED}invoke>"
V41_PARAMETER, V41_PARAMETER_END = f"<{_SPACED}parameter ", f"</{_SPACED}parameter>"
_DSML_BLOCKS = tuple(
    (f"<{token}{name}>", f"</{token}{name}>")
    for token in (DSML, _SPACED)
    for name in ("function_calls", "tool_calls", "calls")
)
_DSML_DROP = tuple(marker for pair in _DSML_BLOCKS for marker in pair)
_DSML_ENDS = tuple(end for _, end in _DSML_BLOCKS)
_DSML_HEAD = re.compile(r'[^"<>\s]+"\s*>')
_FENCED = re.compile(r"\s*```(?:json)?\s*\n?(.*?)\n?\s*```\s*", re.DOTALL)


class DeepSeek:
    """DeepSeek V3 / V3.1 / R1."""

    name = "deepseek"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ()
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """V3.1's tool section: each tool's description and parameter schema."""
        tools = "\n\n".join(
            f"### {f['name']}\nDescription: {f.get('description') or ''}\n\n"
            f"Parameters: {json_text(f.get('parameters') or {}, TOKENS)}"
            for f in (t["function"] for t in catalog_tools(catalog))
        )
        line = "" if parallel else "Call at most one tool per reply."
        return _PROMPT.format(
            tools=neutralise_tokens(tools, TOKENS),
            calls_begin=CALLS_BEGIN,
            calls_end=CALLS_END,
            call_begin=CALL_BEGIN,
            call_end=CALL_END,
            sep=SEP,
            parallel=line,
        ).replace("\n\nIf no tool", "\nIf no tool")

    def render_calls(self, calls: list[CallText]) -> str:
        """V3.1: the calls chained in one block."""
        inner = "".join(
            f"{CALL_BEGIN}{name}{SEP}{json_text(arguments, TOKENS)}{CALL_END}"
            for name, arguments in calls
        )
        return f"{CALLS_BEGIN}{inner}{CALLS_END}"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """One tool-output block per result, in call order."""
        return "".join(
            f"{OUTPUT_BEGIN}{neutralise_tokens(content, TOKENS)}{OUTPUT_END}"
            for _, content in results
        )

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser per call (V3/V3.1) or invoke (DSML); the block markers around them
        carry nothing."""
        from . import dsml

        def decode_any(body: str, lenient: bool) -> Decoded | None:
            if _DSML_HEAD.match(body):
                return _decode_dsml(body, lenient, specs)
            return decode(body, lenient)

        envelopes = [
            Envelope(CALL_BEGIN, CALL_END, _scanner),
            Envelope(dsml.INVOKE, dsml.INVOKE_END, dsml._scanner),
            Envelope(V41_INVOKE, V41_INVOKE_END, _v41_scanner),
        ]
        inner = TaggedParser(
            specs,
            decode_any,
            envelopes,
            strict=strict,
            stops=(OUTPUT_BEGIN, OUTPUTS_BEGIN, dsml.RESULTS_BEGIN),
            drop=(CALLS_BEGIN, CALLS_END, EOS, *_DSML_DROP),
        )
        return ThinkingParser(inner)


def _scanner(lenient: bool) -> BodyScanner:
    return QuotedScanner(CALL_END, ends=(CALL_BEGIN, CALLS_END) if lenient else ())


def _v41_scanner(lenient: bool) -> BodyScanner:
    ends = (V41_INVOKE, *_DSML_ENDS) if lenient else ()
    return XmlScanner(V41_INVOKE_END, ends=ends, value=(V41_PARAMETER, V41_PARAMETER_END))


def _decode_dsml(body: str, lenient: bool, specs: ToolSpecs) -> Decoded | None:
    """An invoke's body, V4.1's spaced tags read as V3.2's."""
    from . import dsml

    for spaced, tight in ((V41_PARAMETER, dsml.PARAMETER), (V41_PARAMETER_END, dsml.PARAMETER_END)):
        body = body.replace(spaced, tight)
    return dsml._decode(body, lenient, specs)


def decode(body: str, lenient: bool) -> Decoded | None:
    """`NAME<|tool sep|>{…}` (V3.1) or `function<|tool sep|>NAME` and a fenced body (V3)."""
    repairs: list[Repair] = []
    head, found, rest = body.partition(SEP)
    if not found:
        return None
    name = head.strip()
    if name == "function":
        name, _, rest = rest.partition("\n")
        name = name.strip()
        fenced = _FENCED.fullmatch(rest)
        if fenced is None:
            return None
        rest = fenced.group(1)
    if not name or any(c.isspace() for c in name):
        return None
    value = load_value(rest, lenient, repairs) if rest.strip() else {}
    if not isinstance(value, dict):
        return None
    return [(name, value)], repairs
