"""`pythonic`: a Python list of calls (BFCL, Llama 3.2/4, LFM2).

Read inside `<tool_call>`, after Llama 4's `<|python_start|>` (its `<|python_end|>` optional),
or bare as the reply's first non-blank text, as Llama 3.2 and 4 write it
(`[get_weather(city='SF')]`): a list counts only when it opens with a name and `(`, so a reply
that starts `[Note]` stays prose, and brackets inside prose never open a call. Read with `ast`
and a literal whitelist; nothing is evaluated.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..literals import (
    NotLiteral,
    literal,
    parse_expression,
    plain_source,
    render,
    requoted_source,
)
from ..parser import Decoder, Envelope, Parser, TaggedParser, log
from ..reasoning import ThinkingParser
from ..repairs import Decoded, Repair, calls_from_json, stripped_candidates, unfence
from ..scanning import BodyScanner, Brackets, QuotedScanner
from ..toolspecs import ToolSpecs
from .base import THINK_TAGS, CallText, response_blocks

PYTHON_TAG, PYTHON_START, PYTHON_END = "<|python_tag|>", "<|python_start|>", "<|python_end|>"
LLAMA_STOPS = ("<|header_start|>", "<|start_header_id|>")
"""Llama 3 and 4 headers: a turn the model wrote itself (a hallucinated `ipython` result)."""

_PROMPT = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{catalog}
</tools>

To call functions, write them as a Python list inside <tool_call></tool_call> tags, with \
keyword arguments and literal values only (strings in quotes, numbers, True/False/None, \
lists, dicts):
<tool_call>[func_name1(param1=value1, param2=value2), func_name2(param=value)]</tool_call>
{parallel}
If no function is needed, answer normally and do not write <tool_call>.
Never write <tool_response> yourself; results will be provided to you."""


class Pythonic:
    """Compact calls, good for small models."""

    name = "pythonic"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<tool_response>",)
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tool block with the call-list syntax."""
        line = (
            "You may put several calls in the list."
            if parallel
            else "Put at most one call in the list."
        )
        return _PROMPT.format(catalog=catalog, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One `<tool_call>` list holding every call."""
        return "<tool_call>[" + ", ".join(call_text(n, a) for n, a in calls) + "]</tool_call>"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order."""
        return response_blocks(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser reading Python call lists."""
        envelopes = [
            Envelope("<tool_call>", "</tool_call>", _scanner, finished=finished_calls),
            *list_envelopes(),
            Envelope(PYTHON_TAG, "", lambda lenient: CallListScanner(), finished=finished_calls),
        ]
        stops = ("<tool_response>", *LLAMA_STOPS)
        inner = TaggedParser(
            specs,
            known_only(decode, specs),
            envelopes,
            strict=strict,
            stops=stops,
            drop=(PYTHON_END,),
        )
        return ThinkingParser(inner)


def known_only(decoder: Decoder, specs: ToolSpecs) -> Decoder:
    """`decoder`, with a list's calls of tools not offered left out (logged) when it also calls
    an offered one: one list is one block, and a stray name must not cost the others."""

    def decode_known(body: str, lenient: bool) -> Decoded | None:
        decoded = decoder(body, lenient)
        if decoded is None:
            return None
        calls, repairs = decoded
        known = [c for c in calls if specs.resolve(c[0], lenient, []) is not None]
        if known and len(known) < len(calls):
            dropped = [c[0] for c in calls if c not in known]
            log.warning("emulated tool calls of unknown tools left out: %.200r", dropped)
            return known, repairs
        return decoded

    return decode_known


def list_envelopes() -> list[Envelope]:
    """A bare call list at the reply's start, and one after `<|python_start|>` (Llama 4); the
    calls a list finished before the length limit cut it run."""
    return [
        Envelope(
            "[",
            "",
            lambda lenient: CallListScanner(),
            keep_markers=True,
            at_start=True,
            finished=finished_calls,
        ),
        Envelope(PYTHON_START, "", lambda lenient: CallListScanner(), finished=finished_calls),
    ]


def _scanner(lenient: bool) -> BodyScanner:
    return QuotedScanner("</tool_call>", quotes="\"'")


class CallListScanner:
    """Ends just past a balanced `[name(…), …]` (quote-aware); a body whose head is not `[`, a
    name and `(` ends right after its `[`, so the text goes back as prose at once."""

    def __init__(self) -> None:
        self._pos = 0
        self._brackets = Brackets(quotes="\"'", opens="[({", closes="])}")
        self._head_ok = False

    def scan(self, buf: str) -> tuple[int, str] | None:
        """(index just past the list, ""); None while the list goes on."""
        if not self._head_ok:
            head = call_list_head(buf)
            if head is None:
                return None
            if not head:
                # Not a call list: the `[` (if any) goes back as text, and the rest after it.
                return (buf.index("[") + 1 if buf.lstrip().startswith("[") else 0), ""
            self._head_ok = True
        i, n = self._pos, len(buf)
        while i < n:
            if self._brackets.step(buf[i]):
                self._pos = i + 1
                return i + 1, ""
            i += 1
        self._pos = i
        return None


def finished_calls(body: str, lenient: bool) -> Decoded | None:
    """The calls a cut-off call list finished before the cut (`Envelope.finished`: they run,
    the cut one does not); None when it finished none."""
    finished = top_level_parts(body, ",", depth=1)[:-1]
    decoded = decode(",".join(finished) + "]", lenient) if finished else None
    return decoded if decoded and decoded[0] else None


def top_level_parts(body: str, separator: str, *, depth: int = 0) -> list[str]:
    """`body` split at each `separator` that stands outside strings at bracket `depth` (0: the
    calls of OLMo 3's lines; 1: the items of a list)."""
    brackets = Brackets(quotes="\"'", opens="[({", closes="])}")
    parts, start = [], 0
    for i, ch in enumerate(body):
        brackets.step(ch)
        if ch == separator and brackets.depth == depth and not brackets.in_string:
            parts.append(body[start:i])
            start = i + 1
    return [*parts, body[start:]]


def call_list_head(text: str) -> bool | None:
    """Whether `text` opens with `[`, a (dotted) name and `(`, blanks allowed between them;
    None while it may still."""
    rest = text.lstrip()
    if not rest:
        return None
    if rest[0] != "[":
        return False
    rest = rest[1:].lstrip()
    if not rest:
        return None
    if not (rest[0].isalpha() or rest[0] == "_"):
        return False
    end = 1
    while end < len(rest) and (rest[end].isalnum() or rest[end] in "_."):
        end += 1
    rest = rest[end:].lstrip()
    return None if not rest else rest[0] == "("


def call_text(name: str, arguments: Any) -> str:
    """One call as Python source: `name(key=value, …)`, values as literals."""
    if not isinstance(arguments, dict):
        return f"{name}({render(arguments)})"
    return f"{name}(" + ", ".join(f"{k}={render(v)}" for k, v in arguments.items()) + ")"


def decode(body: str, lenient: bool) -> Decoded | None:
    """Calls from a `[f(a=1), …]` body; None if it is not a valid call list."""
    for text, repairs in stripped_candidates(body, lenient):
        decoded = _decode(unfence(text, lenient, repairs).strip(), lenient, repairs)
        if decoded is not None:
            return decoded
    return None


def _decode(text: str, lenient: bool, repairs: list[Repair]) -> Decoded | None:
    node = _expression(text, lenient, repairs)
    if lenient and isinstance(node, ast.List | ast.Dict) and _all_dicts(node):
        calls = calls_from_json(text, lenient, repairs)
        return None if calls is None else (calls, [*repairs, Repair.JSON_CALLS])
    if isinstance(node, ast.List):
        elements: list[ast.expr] = list(node.elts)
    elif lenient and isinstance(node, ast.Call | ast.Tuple):
        repairs.append(Repair.MISSING_BRACKETS)
        elements = [node] if isinstance(node, ast.Call) else list(node.elts)
    else:
        return None
    calls_out = []
    for element in elements:
        call = _read_call(element, lenient, repairs)
        if call is None:
            return None
        calls_out.append(call)
    return calls_out, repairs


def _expression(text: str, lenient: bool, repairs: list[Repair]) -> ast.expr | None:
    """The body's expression; lenient, also after `plain_source`'s rewrite, or (nested quotes)
    `requoted_source`'s."""
    try:
        return parse_expression(text)
    except NotLiteral:
        if not lenient:
            return None
    requoted = requoted_source(text)
    rewrites = [(plain_source(text), Repair.PLAIN_SOURCE)]
    if requoted is not None:
        rewrites.append((plain_source(requoted), Repair.NESTED_QUOTES))
    for rewritten, repair in rewrites:
        if rewritten == text:
            continue
        try:
            node = parse_expression(rewritten)
        except NotLiteral:
            continue
        repairs.append(repair)
        return node
    return None


def _read_call(node: ast.expr, lenient: bool, repairs: list[Repair]) -> tuple[str, Any] | None:
    if not isinstance(node, ast.Call):
        return None
    name = _dotted(node.func)
    keys = [k.arg for k in node.keywords]
    # ast.parse accepts a repeated keyword (only the compiler rejects it); it is ambiguous.
    if name is None or None in keys or len(set(keys)) != len(keys):
        return None
    try:
        arguments = {k.arg: literal(k.value) for k in node.keywords if k.arg is not None}
        if node.args:
            if not (lenient and len(node.args) == 1 and not node.keywords):
                return None
            arguments = literal(node.args[0])
            if not isinstance(arguments, dict):
                return None
            repairs.append(Repair.POSITIONAL_DICT)
    except NotLiteral:
        return None
    return name, arguments


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _all_dicts(node: ast.List | ast.Dict) -> bool:
    """A JSON call object, or a list of them, written where a call list belongs."""
    if isinstance(node, ast.Dict):
        return True
    return bool(node.elts) and all(isinstance(e, ast.Dict) for e in node.elts)
