"""`gemma`: Gemma 4's `<|tool_call>call:NAME{key:value,…}<tool_call|>` calls.

Gemma 4 also opens a call without `call` (`<|tool_call>:NAME{…}`, even `<|tool_call>NAME{…}`);
both are read. Arguments are written in Gemma's own object syntax: bare keys, strings between
`<|"|>` quote tokens (no escaping inside), numbers, `true`/`false`/`null`, `{…}` and `[…]` bare.
FunctionGemma's `<start_function_call>call:NAME{k:<escape>v<escape>}<end_function_call>` is
the same syntax with other tokens, and is read too. Tools are declared as
`<|tool>declaration:NAME{description:…,parameters:{…}}<tool|>` (schema types upper-case),
results go back as `<|tool_response>response:NAME{value:…}<tool_response|>`, and reasoning
is a leading `<|channel>thought … <channel|>` block. The markers are special tokens.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, Repair
from ..scanning import BodyScanner, XmlScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from ..values import typed_arguments
from .base import KEEP_SPECIAL_TOKENS, CallText, catalog_tools

QUOTE, ESCAPE = '<|"|>', "<escape>"
CALL_OPEN, CALL_CLOSE = "<|tool_call>", "<tool_call|>"
FG_OPEN, FG_CLOSE = "<start_function_call>", "<end_function_call>"
RESPONSE_OPEN, RESPONSE_CLOSE = "<|tool_response>", "<tool_response|>"
TOKENS = (
    QUOTE,
    CALL_OPEN,
    CALL_CLOSE,
    RESPONSE_OPEN,
    RESPONSE_CLOSE,
    "<|tool>",
    "<tool|>",
    FG_OPEN,
    FG_CLOSE,
    ESCAPE,
    "<start_function_response>",
)
_PROMPT = """{declarations}

To call a function, write {open}call:NAME{{key:value,…}}{close}, strings between {quote} \
marks, for example: {open}call:get_weather{{city:{quote}Paris{quote},days:2}}{close}
{parallel}
If no function is needed, answer normally. Results come back as {response} blocks; never \
write them yourself."""
_HEAD = re.compile(r"\s*(?:call\s*:|:)?\s*([^\s{:][^\s{]*)\s*(?={)")
"""A call's head: `call:NAME`, or the bare `:NAME` and `NAME` openers Gemma 4 also writes."""
_BARE = re.compile(r"[^,}\]\s]+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


class Gemma:
    """Gemma 4 (and FunctionGemma): calls in Gemma's object syntax."""

    name = "gemma"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = (RESPONSE_OPEN,)
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = ("<|channel>thought", "<channel|>")

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """Each tool as a `<|tool>declaration:…<tool|>` block, then how to call."""
        declarations = "".join(
            f"<|tool>declaration:{f['name']}{_declaration(f)}<tool|>"
            for f in (t["function"] for t in catalog_tools(catalog))
        )
        line = (
            "You may write several calls in one reply."
            if parallel
            else "Write at most one call per reply."
        )
        return _PROMPT.format(
            declarations=declarations,
            open=CALL_OPEN,
            close=CALL_CLOSE,
            quote=QUOTE,
            response=RESPONSE_OPEN,
            parallel=line,
        )

    def render_calls(self, calls: list[CallText]) -> str:
        """One `<|tool_call>` block per call."""
        return "".join(f"{CALL_OPEN}call:{n}{render(_object(a))}{CALL_CLOSE}" for n, a in calls)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """One `<|tool_response>` block per result, the content as its `value`."""
        return "".join(
            f"{RESPONSE_OPEN}response:{name}{{value:{QUOTE}{neutralise_tokens(content, TOKENS)}"
            f"{QUOTE}}}{RESPONSE_CLOSE}"
            for name, content in results
        )

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser per call, for Gemma 4's and FunctionGemma's tokens."""
        envelopes = [
            Envelope(CALL_OPEN, CALL_CLOSE, _scanner(CALL_CLOSE, QUOTE)),
            Envelope(FG_OPEN, FG_CLOSE, _scanner(FG_CLOSE, ESCAPE)),
        ]
        stops = (RESPONSE_OPEN, "<start_function_response>")

        def typed(body: str, lenient: bool) -> Decoded | None:
            return decode(body, lenient, specs)

        inner = TaggedParser(specs, typed, envelopes, strict=strict, stops=stops, drop=("<turn|>",))
        return ThinkingParser(inner, open="<|channel>thought", close="<channel|>")


def _scanner(close: str, quote: str) -> Any:
    def build(lenient: bool) -> BodyScanner:
        return XmlScanner(close, value=(quote, quote))

    return build


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"arguments": value}


def render(value: Any, quote: str = QUOTE) -> str:
    """A JSON value in Gemma's syntax."""
    if isinstance(value, str):
        return f"{quote}{value}{quote}"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{render(v, quote)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(render(v, quote) for v in value) + "]"
    return json.dumps(value)


def _declaration(function: dict[str, Any], quote: str = QUOTE) -> str:
    parts = {"description": str(function.get("description") or "")}
    parameters = function.get("parameters")
    body = render(parts, quote)[:-1]
    if isinstance(parameters, dict) and parameters:
        body += ",parameters:" + render(_upper_types(parameters), quote)
    return neutralise_tokens(body, TOKENS[1:]) + "}"


def _upper_types(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_upper_types(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        k: (v.upper() if k == "type" and isinstance(v, str) else _upper_types(v))
        for k, v in schema.items()
    }


def decode(body: str, lenient: bool, specs: ToolSpecs | None = None) -> Decoded | None:
    """`call:NAME{…}` in Gemma's syntax (`<|"|>` or FunctionGemma's `<escape>` quotes), values
    converted by the tool's schema in `specs`: Gemma 4 writes them typed, FunctionGemma quotes
    every one (its text read as JSON where the schema gives no type)."""
    repairs: list[Repair] = []
    head = _HEAD.match(body)
    if head is None:
        return None
    quote = ESCAPE if ESCAPE in body and QUOTE not in body else QUOTE
    reader = _Reader(body, head.end(), quote, lenient, repairs)
    try:
        arguments = reader.value()
        reader.end()
    except ValueError:
        return None
    if not isinstance(arguments, dict):
        return None
    name = head.group(1)
    if specs is not None:
        parameters = specs.parameters(name)
        arguments = typed_arguments(arguments, parameters, lenient, repairs, typed=quote == QUOTE)
    return [(name, arguments)], repairs


class _Reader:
    """A recursive-descent reader of one Gemma value."""

    def __init__(self, text: str, pos: int, quote: str, lenient: bool, repairs: list[Repair]):
        self._text, self._pos, self._quote = text, pos, quote
        self._lenient, self._repairs = lenient, repairs
        self._depth = 0

    def end(self) -> None:
        self._skip()
        if self._pos != len(self._text):
            raise ValueError("text after the value")

    def value(self) -> Any:
        self._skip()
        text, pos = self._text, self._pos
        if text.startswith(self._quote, pos):
            close = text.find(self._quote, pos + len(self._quote))
            if close < 0:
                raise ValueError("unclosed string")
            self._pos = close + len(self._quote)
            return text[pos + len(self._quote) : close]
        if pos < len(text) and text[pos] in "{[":
            return self._container(text[pos])
        if self._lenient and pos < len(text) and text[pos] == '"':
            decoded, self._pos = json.JSONDecoder().raw_decode(text, pos)
            self._repairs.append(Repair.PY_LITERAL)
            return decoded
        return self._scalar()

    def _container(self, opener: str) -> Any:
        self._depth += 1
        if self._depth > 64:
            raise ValueError("nested too deeply")
        closer = "}" if opener == "{" else "]"
        self._pos += 1
        items: dict[str, Any] | list[Any] = {} if opener == "{" else []
        self._skip()
        while not self._text.startswith(closer, self._pos):
            if isinstance(items, dict):
                key = self._key()
                if key in items:
                    raise ValueError("repeated key")
                items[key] = self.value()
            else:
                items.append(self.value())
            self._skip()
            if self._text.startswith(",", self._pos):
                self._pos += 1
                self._skip()
            elif not self._text.startswith(closer, self._pos):
                raise ValueError("expected , or " + closer)
        self._pos += 1
        self._depth -= 1
        return items

    def _key(self) -> str:
        self._skip()
        if self._text.startswith(self._quote, self._pos):
            key = self.value()
        else:
            colon = self._text.find(":", self._pos)
            if colon < 0:
                raise ValueError("expected a key")
            key = self._text[self._pos : colon].strip().strip('"')
            self._pos = colon
        self._skip()
        if not self._text.startswith(":", self._pos) or not key:
            raise ValueError("expected key:")
        self._pos += 1
        return str(key)

    def _scalar(self) -> Any:
        match = _BARE.match(self._text, self._pos)
        if match is None:
            raise ValueError("expected a value")
        self._pos = match.end()
        word = match.group(0)
        if word in ("true", "false"):
            return word == "true"
        if word == "null":
            return None
        if _NUMBER.fullmatch(word):
            number = json.loads(word)
            if isinstance(number, float) and not math.isfinite(number):
                raise ValueError("non-finite number")
            return number
        raise ValueError(f"not a value: {word[:20]}")

    def _skip(self) -> None:
        while self._pos < len(self._text) and self._text[self._pos].isspace():
            self._pos += 1


FG_DECLARATION = ("<start_function_declaration>", "<end_function_declaration>")
FG_RESPONSE = ("<start_function_response>", "<end_function_response>")
_FG_PROMPT = """You are a model that can do function calling with the following functions
{declarations}
To call a function, write {open}call:NAME{{key:{quote}value{quote},…}}{close}, every value \
between {quote} marks, for example: {open}call:get_weather{{city:{quote}Paris{quote}}}{close}
{parallel}
If no function is needed, answer normally. Results come back as {response} blocks; never \
write them yourself."""


class FunctionGemma(Gemma):
    """FunctionGemma's own prompt and history (`functiongemma`): Gemma's syntax under its
    `<start_function_call>` and `<escape>` tokens; read by the family's parser."""

    name = "functiongemma"
    stops: tuple[str, ...] = (FG_RESPONSE[0], RESPONSE_OPEN)
    think_tags: tuple[str, str] | None = None

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """Each tool as a `<start_function_declaration>` block, then how to call."""
        declarations = "".join(
            f"{FG_DECLARATION[0]}declaration:{f['name']}{_declaration(f, ESCAPE)}"
            f"{FG_DECLARATION[1]}"
            for f in (t["function"] for t in catalog_tools(catalog))
        )
        line = "You may write several calls." if parallel else "Write at most one call."
        return _FG_PROMPT.format(
            declarations=declarations,
            open=FG_OPEN,
            close=FG_CLOSE,
            quote=ESCAPE,
            response=FG_RESPONSE[0],
            parallel=line,
        )

    def render_calls(self, calls: list[CallText]) -> str:
        """One `<start_function_call>` block per call, every value between `<escape>` marks."""
        return "".join(
            f"{FG_OPEN}call:{n}{render(_quoted(_object(a)), ESCAPE)}{FG_CLOSE}" for n, a in calls
        )

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """One `<start_function_response>` block per result, the content as its `value`."""
        return "".join(
            f"{FG_RESPONSE[0]}response:{name}{{value:{ESCAPE}"
            f"{neutralise_tokens(content, TOKENS)}{ESCAPE}}}{FG_RESPONSE[1]}"
            for name, content in results
        )


def _quoted(arguments: dict[str, Any]) -> dict[str, Any]:
    """Each scalar argument as its JSON text (FunctionGemma quotes every argument); objects and
    arrays in Gemma's syntax, their numbers bare."""
    return {
        k: v if isinstance(v, str | dict | list) else json.dumps(v) for k, v in arguments.items()
    }
