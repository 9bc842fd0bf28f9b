"""`longcat`: LongCat-Flash's calls in `<longcat_tool_call>` tags, in either syntax its
versions write: Hermes's JSON object (Flash-Chat) or the name and key/value pairs
(Flash-Lite and later, GLM's layout with LongCat's own tags).

    <longcat_tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </longcat_tool_call>
    <longcat_tool_call>get_weather
    <longcat_arg_key>city</longcat_arg_key>
    <longcat_arg_value>Paris</longcat_arg_value>
    </longcat_tool_call>

One block per call, prose may come before, between and after them. A pair's value is raw text
read by the tool's schema, and may hold any text, the block's end marker included; the name
may carry the template's `functions.` namespace. The template lists the
tools under `## Tools` with each one's name, description and input schema, and gives results
back in `<longcat_tool_response>` blocks. LongCat-Flash-Thinking opens its reply with a
`<longcat_think>` block (a plain `<think>` one is read too). The tags are special tokens.
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
from ..scanning import BodyScanner, QuotedScanner, XmlScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from ..values import typed_arguments
from .base import KEEP_SPECIAL_TOKENS, CallText, catalog_tools
from .json_calls import Shape, decoder
from .marked_json import json_or, render_blocks

OPEN, CLOSE = "<longcat_tool_call>", "</longcat_tool_call>"
RESULT_OPEN, RESULT_CLOSE = "<longcat_tool_response>", "</longcat_tool_response>"
THINK_OPEN, THINK_CLOSE = "<longcat_think>", "</longcat_think>"
KEY_OPEN, KEY_CLOSE = "<longcat_arg_key>", "</longcat_arg_key>"
VALUE_OPEN, VALUE_CLOSE = "<longcat_arg_value>", "</longcat_arg_value>"
TOKENS = (OPEN, CLOSE, RESULT_OPEN, RESULT_CLOSE, THINK_OPEN, THINK_CLOSE, KEY_OPEN, VALUE_OPEN)
_NAME = re.compile(r"\s*(?:functions\.)?([^\s<]+)")
_PAIR = re.compile(rf"\s*{KEY_OPEN}(.*?){KEY_CLOSE}\s*{VALUE_OPEN}(.*?){VALUE_CLOSE}", re.DOTALL)
_JSON = decoder(Shape.OBJECT)
_PROMPT = """## Tools
You have access to the following tools:

### Tool namespace: function

{tools}

**Note**: For each function call, return a json object with function name and arguments \
within {open}{close} XML tags as follows:
{open}
{{"name": <function-name>, "arguments": <args-dict>}}
{close}
{parallel}
If no function is needed, answer normally. Results come back in {result} blocks; never \
write one yourself."""


class LongCat:
    """LongCat-Flash: Hermes-style JSON in `<longcat_tool_call>` tags."""

    name = "longcat"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = (RESULT_OPEN,)
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = (THINK_OPEN, THINK_CLOSE)

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The template's tool section: each tool's name, description and input schema."""
        tools = "\n\n".join(_tool(tool["function"]) for tool in catalog_tools(catalog))
        line = (
            "When several functions are needed at once, wrap each call in its own "
            f"{OPEN} block and write the blocks one after another."
            if parallel
            else f"Write at most one {OPEN} block per reply."
        )
        return _PROMPT.format(
            tools=neutralise_tokens(tools, TOKENS),
            open=OPEN,
            close=CLOSE,
            parallel=line,
            result=RESULT_OPEN,
        )

    def render_calls(self, calls: list[CallText]) -> str:
        """One `<longcat_tool_call>` block per call."""
        return render_blocks(calls, OPEN, CLOSE, TOKENS)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<longcat_tool_response>` blocks in call order."""
        return "\n".join(
            f"{RESULT_OPEN}\n{neutralise_tokens(content, TOKENS)}\n{RESULT_CLOSE}"
            for _, content in results
        )

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser reading JSON bodies, after either reasoning block."""

        def decode(body: str, lenient: bool) -> Decoded | None:
            return _decode(body, lenient, specs)

        envelope = Envelope(OPEN, CLOSE, _scanner)
        inner = TaggedParser(specs, decode, [envelope], strict=strict, stops=self.stops)
        return ThinkingParser(ThinkingParser(inner), open=THINK_OPEN, close=THINK_CLOSE)


def _scanner(lenient: bool) -> BodyScanner:
    ends = (OPEN,) if lenient else ()
    pairs = XmlScanner(CLOSE, ends=ends, value=(VALUE_OPEN, VALUE_CLOSE))
    return json_or(QuotedScanner(CLOSE, ends=ends), pairs)


def _decode(body: str, lenient: bool, specs: ToolSpecs) -> Decoded | None:
    """A JSON call object, or a name and its key/value pairs."""
    if body.lstrip()[:1] in ("{", "["):
        return _JSON(body, lenient)
    name = _NAME.match(body)
    if name is None:
        return None
    raw: dict[str, str] = {}
    pos = name.end()
    while (pair := _PAIR.match(body, pos)) is not None:
        key = pair.group(1).strip()
        if not key or key in raw:
            return None
        raw[key] = pair.group(2)
        pos = pair.end()
    if body[pos:].strip():
        return None
    repairs: list[Repair] = []
    arguments = typed_arguments(raw, specs.parameters(name.group(1)), lenient, repairs)
    return [(name.group(1), arguments)], repairs


def _tool(function: dict[str, Any]) -> str:
    schema = json.dumps(function.get("parameters") or {}, ensure_ascii=False, indent=2)
    description = function.get("description") or ""
    name = function.get("name")
    return f"#### Tool name: {name}\n\nDescription: {description}\n\nInputSchema:\n{schema}"
