"""`deepseek-v3.2`: DeepSeek V3.2's DSML tool calls.

    <|DSML|function_calls>
    <|DSML|invoke name="get_weather">
    <|DSML|parameter name="city" string="true">Paris</|DSML|parameter>
    <|DSML|parameter name="days" string="false">2</|DSML|parameter>
    </|DSML|invoke>
    </|DSML|function_calls>

`|DSML|` is a special token (written here with ASCII bars; the real ones are U+FF5C). A
parameter marked `string="true"` holds its string as written (no quotes, no escaping);
`string="false"` holds JSON. Each invoke is read as one call, so an unknown or broken one
stays text without taking its neighbours with it; a value may hold any text,
`</|DSML|invoke>` included. The template declares the tools as JSON lines in `<functions>`
and gives results back as `<result>` items in one `<function_results>` block; reasoning is
a leading `<think>` block (opened by the template in thinking mode). Later templates name
the block `tool_calls`: read too.
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
from ..scanning import BodyScanner, XmlScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from ..values import convert, schema_types, unwrapped
from .base import KEEP_SPECIAL_TOKENS, THINK_TAGS, CallText, catalog_tools, json_text
from .deepseek import EOS, DeepSeek

DSML = "\uff5cDSML\uff5c"
CALLS_BEGIN, CALLS_END = f"<{DSML}function_calls>", f"</{DSML}function_calls>"
BLOCK_BEGIN, BLOCK_END = f"<{DSML}tool_calls>", f"</{DSML}tool_calls>"
INVOKE, INVOKE_END = f'<{DSML}invoke name="', f"</{DSML}invoke>"
PARAMETER, PARAMETER_END = f"<{DSML}parameter ", f"</{DSML}parameter>"
RESULTS_BEGIN, RESULTS_END = "<function_results>", "</function_results>"
TOKENS = (f"<{DSML}", f"</{DSML}")
_RESULT_TAGS = ("<result>", "</result>", RESULTS_BEGIN, RESULTS_END)
_PROMPT = """## Tools

You can use the tools below. To call them, write one "{begin}" block in your reply:
{begin}
{invoke}FUNCTION_NAME">
{parameter}name="PARAMETER_NAME" string="true|false">PARAMETER_VALUE{parameter_end}
...
{invoke_end}
{invoke}OTHER_FUNCTION_NAME">
...
{invoke_end}
{end}

Write strings and other scalars as they are, with no quotes and no escaping; write lists and \
objects as JSON. Set string="true" on string values and string="false" on every other type \
(numbers, booleans, arrays, objects).
{parallel}
Results come back in a <function_results> block; never write one yourself.

The functions, as JSON schemas:
<functions>
{tools}
</functions>"""
_NAME = re.compile(r'([^"<>\s]+)"\s*>')
_PARAM = re.compile(
    rf'\s*{re.escape(PARAMETER)}name="([^"]*)"(?:\s+string="(true|false)")?\s*>'
    rf"(.*?){re.escape(PARAMETER_END)}",
    re.DOTALL,
)


class DeepSeekDsml:
    """DeepSeek V3.2: invokes with typed parameters in a DSML block."""

    name = "deepseek-v3.2"
    block = (CALLS_BEGIN, CALLS_END)
    """The block around the invokes (V3.2's `function_calls`)."""
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = (RESULTS_BEGIN,)
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """V3.2's tool section: the block's syntax, then one JSON schema per line."""
        tools = "\n".join(
            json_text(tool["function"], TOKENS, sort_keys=True) for tool in catalog_tools(catalog)
        )
        return _PROMPT.format(
            begin=self.block[0],
            end=self.block[1],
            invoke=INVOKE,
            invoke_end=INVOKE_END,
            parameter=PARAMETER,
            parameter_end=PARAMETER_END,
            parallel="You may invoke several functions in the block."
            if parallel
            else "Invoke at most one function per reply.",
            tools=neutralise_tokens(tools, (*TOKENS, *_RESULT_TAGS)),
        )

    def render_calls(self, calls: list[CallText]) -> str:
        """One block, an invoke per call, a parameter per argument."""
        invokes = []
        for name, arguments in calls:
            params = arguments if isinstance(arguments, dict) else {"arguments": arguments}
            lines = "".join(f"{_parameter(key, value)}\n" for key, value in params.items())
            invokes.append(f'{INVOKE}{name}">\n{lines}{INVOKE_END}\n')
        return f"{self.block[0]}\n{''.join(invokes)}{self.block[1]}"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """One `<function_results>` block, a `<result>` per call in call order."""
        items = "".join(
            f"\n<result>{neutralise_tokens(content, (*TOKENS, *_RESULT_TAGS))}</result>"
            for _, content in results
        )
        return f"{RESULTS_BEGIN}{items}\n{RESULTS_END}"

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser per invoke; the block markers around them carry nothing."""

        def decode(body: str, lenient: bool) -> Decoded | None:
            return _decode(body, lenient, specs)

        inner = TaggedParser(
            specs,
            decode,
            [Envelope(INVOKE, INVOKE_END, _scanner)],
            strict=strict,
            stops=(RESULTS_BEGIN,),
            drop=(CALLS_BEGIN, CALLS_END, BLOCK_BEGIN, BLOCK_END, EOS),
        )
        return ThinkingParser(inner)


def _parameter(key: str, value: Any) -> str:
    if isinstance(value, str):
        text, flag = value, "true"
    else:
        text, flag = json_text(value, TOKENS), "false"
    return f'{PARAMETER}name="{key}" string="{flag}">{text}{PARAMETER_END}'


def _scanner(lenient: bool) -> BodyScanner:
    # Outside values, a new invoke or the block's end means the invoke was left open.
    ends = (INVOKE, CALLS_END, BLOCK_END) if lenient else ()
    return XmlScanner(INVOKE_END, ends=ends, value=(PARAMETER, PARAMETER_END))


def _decode(body: str, lenient: bool, specs: ToolSpecs) -> Decoded | None:
    """`NAME">` then parameters, each typed by its `string` flag (or, lenient, the schema)."""
    repairs: list[Repair] = []
    head = _NAME.match(body)
    if head is None:
        return None
    name = head.group(1)
    properties = specs.parameters(name).get("properties")
    properties = properties if isinstance(properties, dict) else {}
    arguments: dict[str, Any] = {}
    pos = head.end()
    for param in _PARAM.finditer(body, pos):
        if param.start() != pos:
            return None
        key, flag, raw = param.group(1), param.group(2), param.group(3)
        if not key or key in arguments:
            return None
        value = _value(raw, flag, properties.get(key) or {}, lenient, repairs)
        if value is _INVALID:
            return None
        arguments[key] = value
        pos = param.end()
    if body[pos:].strip():
        return None
    inner = unwrapped(arguments, specs.parameters(name)) if lenient else None
    if inner is not None:
        repairs.append(Repair.WRAPPER_UNWRAPPED)
    return [(name, arguments if inner is None else inner)], repairs


_INVALID = object()


def _value(raw: str, flag: str | None, schema: Any, lenient: bool, repairs: list[Repair]) -> Any:
    """The value by its flag, then converted by the schema (a whole number as an integer,
    `null` for a string as "null"). Lenient, a value the flag calls a string under a schema
    that allows none, invalid JSON flagged as JSON, or no flag at all is read by the schema:
    a `value_by_schema` repair."""
    if flag == "false":
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = _INVALID
        if parsed is not _INVALID:
            if isinstance(parsed, str) and not schema_types(schema):
                return parsed
            return convert(parsed, schema, lenient=lenient, repairs=repairs)
        if not lenient:
            return _INVALID
    elif flag == "true":
        types = schema_types(schema)
        if not types or "string" in types or not lenient:
            return raw
    elif not lenient:
        return _INVALID
    repairs.append(Repair.VALUE_BY_SCHEMA)
    return convert(raw, schema, lenient=lenient, repairs=repairs)


class DeepSeekV4(DeepSeekDsml):
    """DeepSeek V4's own prompt and history: the invokes in a `tool_calls` block
    (`deepseek-v4`); read by the family's parser, which reads every version."""

    name = "deepseek-v4"
    block = (BLOCK_BEGIN, BLOCK_END)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """The family's parser."""
        return DeepSeek().parser(specs, strict=strict)
