"""Envelopes of JSON calls after a family's marker, where they end (at a closing marker, or
at the JSON value's own end), and Apertus's `{"NAME": {…}}` call shape; the call objects
themselves (`{"name": …, "arguments": {…}}`, one or a list) are json_calls.py's to read.
"""

from __future__ import annotations

from typing import Any

from ..parser import Envelope
from ..repairs import (
    Decoded,
    Repair,
    call_from_object,
    load_value,
    stripped_candidates,
    unfence,
)
from ..scanning import BodyScanner, QuotedScanner, ValueScanner, object_end
from .base import CallText, json_text


def render_blocks(
    calls: list[CallText], open: str, close: str, tokens: tuple[str, ...], *, inner: str = "\n"
) -> str:
    """A block per call, one per line: `open`, the `{"name": …, "arguments": …}` object (its
    strings unable to hold `tokens`) and `close`, `inner` between them."""
    return "\n".join(
        f"{open}{inner}{json_text({'name': name, 'arguments': arguments}, tokens)}{inner}{close}"
        for name, arguments in calls
    )


def tag_envelope(open: str, close: str) -> Envelope:
    """A call between `open` and `close` (Hermes's layout): the body ends at `close` outside
    strings; lenient, also at the next `open` (the model forgot to close)."""

    def scanner(lenient: bool) -> BodyScanner:
        return QuotedScanner(close, ends=(open,) if lenient else ())

    return Envelope(open, close, scanner)


def value_envelope(open: str, **options: Any) -> Envelope:
    """A call whose JSON value ends it: no closing marker (Granite 3.0's `<|tool_call|>[…]`,
    Granite 20B's `<function_call> {…}`). `options`: the `Envelope`'s other fields."""
    return Envelope(open, "", lambda lenient: ValueScanner(), **options)


def json_or(json: BodyScanner, other: BodyScanner) -> BodyScanner:
    """A scanner for a body that is JSON or another syntax, decided at its first non-blank
    character: `json` ends a body opening with `{` or `[`, `other` any other (LongCat's JSON
    objects and key/value pairs in the same tags, Granite's JSON and 4.2's function tags)."""
    return _FirstCharScanner(json, other)


class _FirstCharScanner:
    """Hands the body to `json` when its first non-blank character opens a JSON value, else
    to `other`."""

    def __init__(self, json: BodyScanner, other: BodyScanner) -> None:
        self._json, self._other = json, other
        self._chosen: BodyScanner | None = None

    def scan(self, buf: str) -> tuple[int, str] | None:
        """(index, marker) where the chosen scanner ends the body; None: not yet."""
        if self._chosen is None:
            head = buf.lstrip()
            if not head:
                return None
            self._chosen = self._json if head[0] in "{[" else self._other
        return self._chosen.scan(buf)


class ClosedValueScanner:
    """Ends after the first balanced JSON value: right after it when it is a list; after an
    object, at `close` when that follows (blanks aside), or (lenient) right after the object
    when anything else follows."""

    def __init__(self, close: str, *, lenient: bool) -> None:
        self._value = ValueScanner()
        self._close, self._lenient = close, lenient
        self._end: int | None = None
        self._list = False

    def scan(self, buf: str) -> tuple[int, str] | None:
        """(index, marker) where the call ends; None while it may go on."""
        if self._end is None:
            found = self._value.scan(buf)
            if found is None:
                return None
            self._end = found[0]
            self._list = buf[: self._end].lstrip().startswith("[")
        if self._list:
            return self._end, ""
        rest = buf[self._end :]
        blanks = len(rest) - len(rest.lstrip())
        after = rest[blanks:]
        if after.startswith(self._close):
            return self._end + blanks, self._close
        if not after or self._close.startswith(after) or not self._lenient:
            return None
        return self._end, ""


def keyed_calls(body: str, lenient: bool) -> Decoded | None:
    """Calls from a non-empty list of `{"NAME": {arguments}}` objects (Apertus); lenient, a
    lone object for the list, and `{"name": …, "arguments": …}` items, are read too. The body
    is read as written, then (lenient) without leaked special tokens."""
    for text, repairs in stripped_candidates(body, lenient):
        calls = _keyed_list(
            load_value(unfence(text, lenient, repairs), lenient, repairs), lenient, repairs
        )
        if calls is not None:
            return calls, repairs
    return None


def _keyed_list(value: Any, lenient: bool, repairs: list[Repair]) -> list[tuple[str, Any]] | None:
    if isinstance(value, dict) and lenient:
        repairs.append(Repair.MISSING_BRACKETS)
        value = [value]
    if not isinstance(value, list) or not value:
        return None
    calls = []
    for item in value:
        call = _keyed(item) or (call_from_object(item, lenient, repairs) if lenient else None)
        if call is None:
            return None
        calls.append(call)
    return calls


def _keyed(item: Any) -> tuple[str, Any] | None:
    if not isinstance(item, dict) or len(item) != 1:
        return None
    [(name, arguments)] = item.items()
    return (name, arguments) if isinstance(arguments, dict) else None


def completed_keyed_calls(body: str, lenient: bool) -> Decoded | None:
    """For a keyed list the length limit cut off: the items the model completed and went on
    from (a `,` after them), read as `keyed_calls`; None when there are none."""
    text = body.strip()
    end, pos = 0, 1
    while text.startswith("["):
        start = _non_blank(text, pos)
        item_end = object_end(text, start) if text[start : start + 1] == "{" else None
        if item_end is None:
            break
        comma = _non_blank(text, item_end)
        if text[comma : comma + 1] != ",":
            break
        end, pos = item_end, comma + 1
    return keyed_calls(text[:end] + "]", lenient) if end else None


def _non_blank(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos
