"""Incremental boundary scanners: where a call body ends, knowing about strings and tags.

Scanners keep their position and string state between calls, so feeding a growing buffer
costs O(n) overall, and a closing tag that straddles two chunks is waited for, not missed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class BodyScanner(Protocol):
    """Finds the end of one call body in a growing buffer."""

    def scan(self, buf: str) -> tuple[int, str] | None:
        """(index, marker) of the first ending marker outside strings; None: not yet."""
        ...


def partial_overlap(text: str, marker: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `marker`."""
    # Such a suffix starts with the marker's first character: one find in the tail, which
    # usually holds none, instead of a comparison per suffix length.
    i = text.find(marker[0], max(0, len(text) - len(marker) + 1)) if marker else -1
    while i >= 0:
        if marker.startswith(text[i:]):
            return len(text) - i
        i = text.find(marker[0], i + 1)
    return 0


def longest_overlap(text: str, markers: tuple[str, ...]) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of one of `markers`."""
    best, end = 0, len(text)
    for marker in markers:
        i = text.find(marker[0], max(0, end - len(marker) + 1)) if marker else -1
        while i >= 0 and end - i > best:
            if marker.startswith(text[i:]):
                best = end - i
                break
            i = text.find(marker[0], i + 1)
    return best


def _at_marker(buf: str, i: int, markers: tuple[str, ...]) -> str | bool | None:
    """The marker starting at `i`; True when one may start there but the buffer ends first."""
    rest = buf[i:]
    for marker in markers:
        if rest.startswith(marker):
            return marker
    return True if any(marker.startswith(rest) for marker in markers) else None


class QuotedScanner:
    """Ends at `close` (or one of `ends`) when outside a string quoted by one of `quotes`."""

    def __init__(self, close: str, *, ends: tuple[str, ...] = (), quotes: str = '"') -> None:
        self._markers = (close, *ends)
        self._firsts = "".join(sorted({marker[0] for marker in self._markers}))
        """Where a marker may start: `<` for tags, a backtick for a fence's close."""
        self._quotes = quotes
        self._pos = 0
        self._quote: str | None = None
        self._escape = False

    def scan(self, buf: str) -> tuple[int, str] | None:
        """(index, marker) of the ending marker; None while the body goes on."""
        i, n = self._pos, len(buf)
        while i < n:
            ch = buf[i]
            if self._quote is not None:
                if self._escape:
                    self._escape = False
                elif ch == "\\":
                    self._escape = True
                elif ch == self._quote:
                    self._quote = None
            elif ch in self._quotes:
                self._quote = ch
            elif ch in self._firsts:
                found = _at_marker(buf, i, self._markers)
                if isinstance(found, str):
                    self._pos = i
                    return i, found
                if found:
                    break  # a marker may start here: wait for more text
            i += 1
        self._pos = i
        return None


class XmlScanner:
    """Ends at `close` outside `<parameter=…>…</parameter>` (or another pair of value tags),
    whose values are raw text."""

    def __init__(
        self,
        close: str,
        *,
        ends: tuple[str, ...] = (),
        value: tuple[str, str] = ("<parameter=", "</parameter>"),
    ) -> None:
        """`value`: the tags around a raw-text value (GLM: `<arg_value>`, `</arg_value>`)."""
        self._markers = (close, *ends)
        self._OPEN_PARAM, self._CLOSE_PARAM = value
        self._pos = 0
        self._in_param = False

    def scan(self, buf: str) -> tuple[int, str] | None:
        """(index, marker) of the ending marker; None while the body goes on."""
        i, n = self._pos, len(buf)
        while i < n:
            if buf[i] != "<":
                i += 1
                continue
            if self._in_param:
                found = _at_marker(buf, i, (self._CLOSE_PARAM,))
                if found is True:
                    break
                if found:
                    self._in_param = False
                    i += len(self._CLOSE_PARAM)
                    continue
            else:
                found = _at_marker(buf, i, self._markers)
                if isinstance(found, str):
                    self._pos = i
                    return i, found
                opens = _at_marker(buf, i, (self._OPEN_PARAM,))
                if found is True or opens is True:
                    break
                if opens:
                    self._in_param = True
                    i += len(self._OPEN_PARAM)
                    continue
            i += 1
        self._pos = i
        return None


def object_end(text: str, start: int = 0) -> int | None:
    """Index just past the balanced `{…}`/`[…]` value opening at `start`; None if unclosed."""
    depth, quote, escape = 0, "", False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


class Brackets:
    """Quote-aware bracket depth, one character at a time: the state both balanced-value
    scanners (`ValueScanner`, pythonic's call lists) keep."""

    __slots__ = ("_closes", "_escape", "_opens", "_quote", "_quotes", "depth")

    def __init__(self, *, quotes: str, opens: str, closes: str) -> None:
        self._quotes, self._opens, self._closes = quotes, opens, closes
        self.depth = 0
        self._quote: str | None = None
        self._escape = False

    @property
    def in_string(self) -> bool:
        return self._quote is not None

    def step(self, ch: str) -> bool:
        """Takes one character; True when it closes the outermost bracket."""
        if self._quote is not None:
            if self._escape:
                self._escape = False
            elif ch == "\\":
                self._escape = True
            elif ch == self._quote:
                self._quote = None
        elif ch in self._quotes:
            self._quote = ch
        elif ch in self._opens:
            self.depth += 1
        elif ch in self._closes:
            self.depth -= 1
            return self.depth == 0
        return False


class ValueScanner:
    """Ends just past the first balanced JSON value (`{…}` or `[…]`) after a short head.

    For formats with no closing tag (Mistral's `[TOOL_CALLS]name[ARGS]{…}`, Llama's bare
    JSON): the head (a name, a separator) runs up to the value's first bracket; a head longer
    than `head_limit` ends the body where it stands, so prose after a marker is given back.
    """

    def __init__(self, *, quotes: str = '"', head_limit: int = 256) -> None:
        self._head_limit = head_limit
        self._pos = 0
        self._brackets = Brackets(quotes=quotes, opens="{[", closes="}]")

    def scan(self, buf: str) -> tuple[int, str] | None:
        """(index just past the value, ""); None while the value goes on."""
        i, n = self._pos, len(buf)
        brackets = self._brackets
        while i < n:
            if brackets.depth == 0 and not brackets.in_string:
                head = self._head(buf, i)
                if head is None:
                    break
                if head:
                    self._pos = i
                    return i, ""
            elif brackets.step(buf[i]):
                self._pos = i + 1
                return i + 1, ""
            i += 1
        self._pos = i
        return None

    def _head(self, buf: str, i: int) -> bool | None:
        """Before the value: True when the head is too long (the body ends here); None: wait
        for the next character."""
        ch = buf[i]
        if ch == "[" and i + 1 == len(buf):
            return None  # `[ARGS]` or an array: the next character decides
        if ch == "{" or (ch == "[" and not (buf[i + 1].isupper() or buf[i + 1] == "/")):
            self._brackets.depth = 1
            return False
        return i >= self._head_limit


class ChosenScanner:
    """A scanner chosen by the body's first non-blank character, once it has come (a body that
    may be a Python list, a JSON value or a call, each ending its own way)."""

    def __init__(self, choose: Callable[[str], BodyScanner]) -> None:
        """`choose` gets the body's first non-blank character."""
        self._choose = choose
        self._chosen: BodyScanner | None = None

    def scan(self, buf: str) -> tuple[int, str] | None:
        """The chosen scanner's end; None while the body goes on (or has not begun)."""
        if self._chosen is None:
            rest = buf.lstrip()
            if not rest:
                return None
            self._chosen = self._choose(rest[0])
        return self._chosen.scan(buf)


def neutralise_tokens(text: str, tokens: tuple[str, ...]) -> str:
    """Break each of a family's marker tokens in text the model did not write (a zero-width
    space after the first character), so a tool result or description cannot pose as a call."""
    for token in tokens:
        if token in text:
            text = text.replace(token, token[0] + "\u200b" + token[1:])
    return text
