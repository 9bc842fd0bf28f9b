"""JSON calls inside a family's envelope, the syntax several families share: a list of call
objects (Jamba's and Hunyuan A13B's `<tool_calls>[…]</tool_calls>`, xLAM's bare or fenced
list, Phi-4-mini's `functools[…]`), one call object (InternLM's action, GigaChat's
`function call`) or call objects one per line (MiniMax M1's `<tool_calls>`), each
`{"name": …, "arguments": {…}}` or with the family's own key for the arguments (InternLM's
`parameters`), read in strict mode too.

Values are JSON, typed as the model wrote them. An empty list, a list holding anything but
call objects, or arguments that are not an object is not a call. A list the length limit cut
off runs the calls it completed (`finished`), never the one it was writing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from ..parser import Decoder, Envelope, TaggedParser
from ..repairs import (
    Decoded,
    Repair,
    call_from_object,
    load_value,
    stripped_candidates,
    unfence,
)
from ..scanning import BodyScanner, Brackets, QuotedScanner, object_end
from ..toolspecs import ToolSpecs
from .base import CallText, json_text
from .pythonic import known_only

FENCE = "```"
_FENCE_OPEN = re.compile(r"^```[\w+-]*[ \t]*\n")


class Shape(Enum):
    """What the envelope holds."""

    LIST = "list"
    """A JSON array of calls (lenient: a lone call object too)."""
    OBJECT = "object"
    """One call object (lenient: an array of them too)."""
    LINES = "lines"
    """Call objects one after another, blanks between (MiniMax M1 writes one per line;
    lenient: an array of them too)."""


def decoder(
    shape: Shape,
    *,
    key: str = "arguments",
    head: str = "",
    name: str = "name",
    call_id: str = "id",
) -> Decoder:
    """A decoder of envelope bodies holding `shape`, whose call objects carry their arguments
    under `key` (or `arguments`), their tool under `name` (Cohere's `tool_name`, or `name`)
    and maybe an id under `call_id`; `head`: a marker the body must open with (InternLM's
    `<|plugin|>`), blanks around it allowed."""
    keys = _keys(key, name, call_id)

    def decode(body: str, lenient: bool) -> Decoded | None:
        for text, repairs in _bodies(body, lenient, head):
            calls = read_calls(unfence(text, lenient, repairs), shape, keys, lenient, repairs)
            if calls is not None:
                return calls, repairs
        return None

    return decode


def finished(
    *, key: str = "arguments", head: str = "", name: str = "name", call_id: str = "id"
) -> Decoder:
    """For a JSON list cut off by the length limit: the call objects the model completed and
    went on from (a `,` after them), in order; None when there are none, or one of them is not
    a call. The keys as `decoder` takes them."""
    keys = _keys(key, name, call_id)

    def decode(body: str, lenient: bool) -> Decoded | None:
        for text, repairs in _bodies(body, lenient, head):
            text = _FENCE_OPEN.sub("", text, count=1) if lenient else text
            calls = _completed_items(text, keys, lenient, repairs)
            if calls:
                return calls, repairs
        return None

    return decode


def _bodies(body: str, lenient: bool, head: str) -> list[tuple[str, list[Repair]]]:
    """The body as written and (lenient) without leaked tokens, each past `head`."""
    found = []
    for text, repairs in stripped_candidates(body, lenient):
        if text.startswith(head):
            found.append((text[len(head) :].strip(), repairs))
    return found


def _completed_items(
    text: str, keys: Mapping[str, str], lenient: bool, repairs: list[Repair]
) -> list[tuple[str, Any]] | None:
    if not text.startswith("["):
        return None
    calls: list[tuple[str, Any]] = []
    pos = _past_blanks(text, 1)
    while text[pos : pos + 1] == "{":
        end = object_end(text, pos)
        after = _past_blanks(text, end) if end is not None else len(text)
        if end is None or text[after : after + 1] != ",":
            break  # the last call before the cut counts only once the model went on
        call = read_calls(text[pos:end], Shape.OBJECT, keys, lenient, repairs)
        if call is None:
            return None
        calls += call
        pos = _past_blanks(text, after + 1)
    return calls


def _past_blanks(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def read_calls(
    text: str, shape: Shape, keys: Mapping[str, str], lenient: bool, repairs: list[Repair]
) -> list[tuple[str, Any]] | None:
    """The calls of one JSON value of `shape` (of a run of them: `LINES`); None if it is not
    one."""
    text = text.strip()
    if text[:1] not in ("[", "{"):
        return None
    if shape is Shape.LINES:
        return _object_run(text, keys, lenient, repairs)
    value = load_value(text, lenient, repairs)
    if value is None and lenient:
        value = _with_control_chars(text, repairs)
    wanted = list if shape is Shape.LIST else dict
    if not isinstance(value, wanted):
        if not lenient or not isinstance(value, list | dict):
            return None
        repairs.append(Repair.LIST_IN_TAG if isinstance(value, list) else Repair.MISSING_BRACKETS)
    items = value if isinstance(value, list) else [value]
    if not items:
        return None
    calls = []
    for item in items:
        call = call_from_object(_own_keys(item, keys), lenient, repairs)
        if call is None:
            return None
        calls.append(call)
    return calls


def _object_run(
    text: str, keys: Mapping[str, str], lenient: bool, repairs: list[Repair]
) -> list[tuple[str, Any]] | None:
    """The calls of call objects one after another, blanks between; None if anything else
    stands between them."""
    if text.startswith("["):
        return read_calls(text, Shape.OBJECT, keys, lenient, repairs)
    calls: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text):
        end = object_end(text, pos) if text[pos] == "{" else None
        found = (
            None if end is None else read_calls(text[pos:end], Shape.OBJECT, keys, lenient, repairs)
        )
        if end is None or found is None:
            return None
        calls += found
        pos = _past_blanks(text, end)
    return calls


def _keys(key: str, name: str, call_id: str) -> dict[str, str]:
    """A family's own keys of a call object, each with the key `call_from_object` reads."""
    return {key: "arguments", name: "name", call_id: "id"}


def _with_control_chars(text: str, repairs: list[Repair]) -> Any:
    """The JSON value when only raw control characters in its strings kept it from being
    read (GigaChat writes raw newlines; SGLang reads them too); None otherwise."""
    try:
        value = json.loads(text, strict=False)
    except ValueError:
        return None
    repairs.append(Repair.RAW_CONTROL_CHARS)
    return value


def _own_keys(item: Any, keys: Mapping[str, str]) -> Any:
    """The call object with the family's own keys read as the usual ones (`parameters` as
    `arguments`, Cohere's `tool_name` as `name`); a usual key written too wins."""
    if not isinstance(item, dict):
        return item
    renamed = {own: std for own, std in keys.items() if own != std and own in item}
    renamed = {own: std for own, std in renamed.items() if std not in item}
    if not renamed:
        return item
    return {renamed.get(k, k): v for k, v in item.items()}


def list_line(parallel: bool, container: str = "list") -> str:
    """The sentence that allows several calls in the one list of a reply, or forbids them."""
    if parallel:
        return f"You may put several calls in the {container}."
    return f"Put at most one call in the {container}."


def render_list(calls: list[CallText], tokens: tuple[str, ...], key: str = "arguments") -> str:
    """The calls as one JSON list of `{"name": …, key: …}` objects, markers escaped."""
    return json_text([{"name": name, key: arguments} for name, arguments in calls], tokens)


def list_envelope(open: str, close: str, specs: ToolSpecs, **options: Any) -> Envelope:
    """A JSON list of calls between `open` and `close`: the body ends at `close` outside
    strings (lenient, also at a new `open`: the model forgot to close); a cut-off list runs
    the calls it completed, of offered tools. `options`: the `Envelope`'s other fields."""

    def scanner(lenient: bool) -> BodyScanner:
        return QuotedScanner(close, ends=(open,) if lenient else ())

    return Envelope(open, close, scanner, finished=known_only(finished(), specs), **options)


def list_parser(
    specs: ToolSpecs,
    open: str,
    close: str,
    *,
    strict: bool,
    stops: Sequence[str],
    drop: Sequence[str] = (),
) -> TaggedParser:
    """A tagged parser of JSON call lists between `open` and `close` (Jamba's and Hunyuan's
    `<tool_calls>`), a list's calls of tools not offered left out when it calls offered ones;
    `drop`: markers with no meaning of their own."""
    decode = known_only(decoder(Shape.LIST), specs)
    envelope = list_envelope(open, close, specs)
    return TaggedParser(specs, decode, [envelope], strict=strict, stops=stops, drop=drop)


class ListScanner:
    """Ends just past a JSON list whose head is `[` then `{` (blanks between): xLAM's bare
    list, Phi-4-mini's after `functools`; with `fence`, after the code fence's opening line
    and up to its closing backticks. A body whose head is anything else ends at once, so the
    text goes back as prose."""

    def __init__(self, *, fence: str = "") -> None:
        """`fence`: the code fence's backticks the body opens with (kept), or ""."""
        self._fence = fence
        self._start: int | None = None
        self._pos = 0
        self._brackets = Brackets(quotes='"', opens="{[", closes="}]")
        self._end: int | None = None

    def scan(self, buf: str) -> tuple[int, str] | None:
        """(index, marker) where the body ends; None while it may go on."""
        if self._start is None:
            head = self._head(buf)
            if head is None:
                return None
            if head < 0:
                return len(self._fence), ""
            self._start = self._pos = head
        if self._end is None:
            self._end = self._value_end(buf)
            if self._end is None:
                return None
        return self._close(buf, self._end)

    def _head(self, buf: str) -> int | None:
        """Where the list's `[` is; -1: the head is not a call list's; None: wait."""
        pos = 0
        if self._fence:
            pos = len(self._fence)
            while pos < len(buf) and (buf[pos].isalnum() or buf[pos] in "_+-"):
                pos += 1
            while pos < len(buf) and buf[pos] in " \t":
                pos += 1
            if pos == len(buf):
                return None
            if buf[pos] != "\n":
                return -1
        pos = _past_blanks(buf, pos)
        if pos == len(buf):
            return None
        if buf[pos] != "[":
            return -1
        start, pos = pos, _past_blanks(buf, pos + 1)
        if pos == len(buf):
            return None
        return start if buf[pos] == "{" else -1

    def _value_end(self, buf: str) -> int | None:
        brackets, i, n = self._brackets, self._pos, len(buf)
        while i < n:
            if brackets.step(buf[i]):
                return i + 1
            i += 1
        self._pos = i
        return None

    def _close(self, buf: str, end: int) -> tuple[int, str] | None:
        if not self._fence:
            return end, ""
        after = _past_blanks(buf, end)
        rest = buf[after:]
        if rest.startswith(self._fence):
            return after, self._fence
        if not rest or self._fence.startswith(rest):
            return None
        return end, ""
