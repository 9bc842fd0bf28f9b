"""Calls written as JSON after a family's marker: one call object, or a list of them, up to a
closing marker or the value's own end.

The families that write them (Granite, Apertus, LongCat, ERNIE, dots) differ in their markers
and in one shape: most write Hermes's `{"name": …, "arguments": {…}}`, Apertus writes
`{"NAME": {…}}`. The envelopes and decoders here serve them all.
"""

from __future__ import annotations

from typing import Any

from ..parser import Envelope
from ..repairs import Decoded, Repair, call_from_object, load_value, strip_tokens, unfence
from ..scanning import BodyScanner, QuotedScanner, ValueScanner


def tag_envelope(open: str, close: str) -> Envelope:
    """A call between `open` and `close` (Hermes's layout): the body ends at `close` outside
    strings; lenient, also at the next `open` (the model forgot to close)."""

    def scanner(lenient: bool) -> BodyScanner:
        return QuotedScanner(close, ends=(open,) if lenient else ())

    return Envelope(open, close, scanner)


def value_envelope(open: str) -> Envelope:
    """A call whose JSON value ends it: no closing marker (Granite 3.0's `<|tool_call|>[…]`,
    Granite 20B's `<function_call> {…}`)."""
    return Envelope(open, "", lambda lenient: ValueScanner())


def value_or_tag_envelope(open: str, close: str) -> Envelope:
    """A call after `open` that a list ends by itself and an object ends at `close` (Granite
    3.1's `<tool_call> […]` and Granite 4's `<tool_call>{…}</tool_call>`)."""
    return Envelope(open, close, lambda lenient: ClosedValueScanner(close, lenient=lenient))


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


def _loaded(body: str, lenient: bool, repairs: list[Repair]) -> Any:
    text = unfence(strip_tokens(body.strip(), lenient, repairs).strip(), lenient, repairs)
    return load_value(text, lenient, repairs)


def call_objects(body: str, lenient: bool) -> Decoded | None:
    """Calls from one `{"name": …, "arguments": {…}}` object or a non-empty list of them;
    None if the body is anything else."""
    repairs: list[Repair] = []
    value = _loaded(body, lenient, repairs)
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items:
        call = call_from_object(item, lenient, repairs)
        if call is None:
            return None
        calls.append(call)
    return (calls, repairs) if calls else None


def keyed_calls(body: str, lenient: bool) -> Decoded | None:
    """Calls from a non-empty list of `{"NAME": {arguments}}` objects (Apertus); lenient, a
    lone object for the list, and `{"name": …, "arguments": …}` items, are read too."""
    repairs: list[Repair] = []
    value = _loaded(body, lenient, repairs)
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
    return calls, repairs


def _keyed(item: Any) -> tuple[str, Any] | None:
    if not isinstance(item, dict) or len(item) != 1:
        return None
    [(name, arguments)] = item.items()
    return (name, arguments) if isinstance(arguments, dict) else None
