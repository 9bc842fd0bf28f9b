"""`llama`: every Llama version's tool calls: 3.1-3.3's JSON, `{"name": …, "parameters": {…}}`,
and 3.2/4's Python call lists, `[get_weather(city='SF')]` (bare, or after `<|python_tag|>` or
Llama 4's `<|python_start|>`, read as the `pythonic` format reads them).

The reply that calls a tool is the JSON object itself, decided at its first non-blank
character, optionally after `<|python_tag|>`, or a `{"name"` object right after prose that
ends with a colon (`Here is the result: {…}`, as vLLM's llama3_json reads it; any other `{`
inside prose is never a call); several calls are separated by `;` (as vLLM reads them).
`arguments` is accepted for `parameters`. Llama 3.1's built-in tools are called as
`<|python_tag|>brave_search.call(query="…")` (or `wolfram_alpha`): a call of the tool of that
name when the request offers one, else text. The catalog is laid out as Meta's template does
(each tool as indented JSON after the instruction), results go back as plain text, the
`ipython` turn's content.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, Repair, call_from_object, load_value, stripped_candidates
from ..scanning import (
    BodyScanner,
    Brackets,
    ChosenScanner,
    ValueScanner,
    neutralise_tokens,
)
from ..toolspecs import ToolSpecs
from . import pythonic
from .base import (
    KEEP_SPECIAL_TOKENS,
    THINK_TAGS,
    CallText,
    catalog_tools,
    escape_tokens,
    json_text,
)

TOKENS = (
    "<|python_tag|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "<|start_header_id|>",
    pythonic.PYTHON_START,
    pythonic.PYTHON_END,
    "<|header_start|>",
)
_BUILT_IN = re.compile(r"\s*(?:brave_search|wolfram_alpha)\.call\(")
"""Llama 3.1's built-in tools, called as `<|python_tag|>brave_search.call(query="…")`."""
_PROMPT = """Given the following functions, please respond with a JSON for a function call \
with its proper arguments that best answers the given prompt.

Respond in the format {{"name": function name, "parameters": dictionary of argument name and \
its value}}. Do not use variables.
{parallel}
If no function is needed, answer normally in plain text.

{tools}"""


class Llama:
    """Bare JSON call objects at the start of the reply."""

    name = "llama"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ()
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """Meta's JSON tool-calling instruction, then each tool as indented JSON."""
        tools = "\n\n".join(json_text(t, TOKENS, indent=4) for t in catalog_tools(catalog))
        line = (
            'To call several functions at once, separate their JSON objects with "; ".'
            if parallel
            else "Call at most one function per reply."
        )
        return _PROMPT.format(tools=tools, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """The JSON objects, separated by `; `."""
        return "; ".join(json_text({"name": n, "parameters": a}, TOKENS) for n, a in calls)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """The results' text, in call order."""
        return "\n\n".join(neutralise_tokens(content, TOKENS) for _, content in results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser whose calls open at the reply's start (or after a call's `;`), or
        at `<|python_tag|>`, and end with their JSON value."""
        envelopes = [
            Envelope("{", "", _scanner, keep_markers=True, at_start=True),
            Envelope(";", "", _scanner, keep_markers=True, at_start=True),
            Envelope("<|python_tag|>", "", _tag_scanner),
            Envelope('{"name"', "", _scanner, keep_markers=True, after=":"),
            *pythonic.list_envelopes(),
        ]
        inner = TaggedParser(
            specs,
            pythonic.known_only(decode, specs),
            envelopes,
            strict=strict,
            stops=pythonic.LLAMA_STOPS,
            drop=(pythonic.PYTHON_END,),
        )
        return ThinkingParser(inner)


def _scanner(lenient: bool) -> BodyScanner:
    return ValueScanner(quotes="\"'" if lenient else '"', head_limit=8)


def _tag_scanner(lenient: bool) -> BodyScanner:
    """After `<|python_tag|>`: a Python call list (Llama 3.2), a built-in tool's `NAME.call(…)`
    (3.1) or a JSON value (3.1), whichever the body opens with."""

    def choose(first: str) -> BodyScanner:
        if first == "[":
            return pythonic.CallListScanner()
        return _BuiltInScanner() if first.isalpha() else _scanner(lenient)

    return ChosenScanner(choose)


class _BuiltInScanner:
    """Ends just past the balanced `(…)` of a built-in tool's `NAME.call(…)` (quote-aware)."""

    def __init__(self) -> None:
        self._pos = 0
        self._brackets = Brackets(quotes="\"'", opens="([{", closes=")]}")

    def scan(self, buf: str) -> tuple[int, str] | None:
        """(index just past the call, ""); None while it goes on."""
        for i in range(self._pos, len(buf)):
            if self._brackets.step(buf[i]):
                self._pos = i + 1
                return i + 1, ""
        self._pos = len(buf)
        return None


def decode(body: str, lenient: bool) -> Decoded | None:
    """The call in one JSON object (after a `;` separator when it follows another call), or
    the calls of a Python call list."""
    if body.lstrip().startswith("["):
        return pythonic.decode(body, lenient)
    if _BUILT_IN.match(body):
        return _built_in(body, lenient)
    for text, repairs in stripped_candidates(body, lenient):
        decoded = _decode(text.removeprefix(";").strip(), lenient, repairs)
        if decoded is not None:
            return decoded
    return None


def _decode(text: str, lenient: bool, repairs: list[Repair]) -> Decoded | None:
    if not text.startswith("{"):
        return None
    value = load_value(text, lenient, repairs)
    if isinstance(value, dict) and "parameters" in value and "arguments" not in value:
        value = {("arguments" if k == "parameters" else k): v for k, v in value.items()}
    call = call_from_object(value, lenient, repairs)
    return None if call is None else ([call], repairs)


def _built_in(body: str, lenient: bool) -> Decoded | None:
    """`brave_search.call(query="…")`: a call of the tool named `brave_search` (the caller
    runs it only when it is offered; else the text stays text)."""
    decoded = pythonic.decode(f"[{body.strip()}]", lenient)
    if decoded is None:
        return None
    calls, repairs = decoded
    return [(name.removesuffix(".call"), arguments) for name, arguments in calls], repairs


_LLAMA4_PROMPT = """Here is a list of functions in JSON format that you can invoke.

{tools}

If you decide to invoke one or more of the functions, reply with nothing but a Python list of \
calls, keyword arguments and literal values only:
[func_name1(param_name1=value1, param_name2=value2), func_name2(param=value)]
{parallel}
If no function is needed, answer normally in plain text."""


class Llama4Pythonic(Llama):
    """Llama 3.2 and 4's own prompt and history: a bare Python list of calls (`llama4-pythonic`;
    read by the family's parser)."""

    name = "llama4-pythonic"

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The function list as JSON, then the call-list syntax."""
        tools = "\n\n".join(json_text(t, TOKENS, indent=4) for t in catalog_tools(catalog))
        line = "You may put several calls in the list." if parallel else "Make at most one call."
        return _LLAMA4_PROMPT.format(tools=tools, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One list holding every call."""
        text = "[" + ", ".join(pythonic.call_text(n, a) for n, a in calls) + "]"
        return escape_tokens(text, TOKENS)
