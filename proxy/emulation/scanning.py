"""Incremental boundary scanners: where a call body ends, knowing about strings and tags.

Scanners keep their position and string state between calls, so feeding a growing buffer
costs O(n) overall, and a closing tag that straddles two chunks is waited for, not missed.
"""

from __future__ import annotations

from typing import Protocol


class BodyScanner(Protocol):
    """Finds the end of one call body in a growing buffer."""

    def scan(self, buf: str) -> tuple[int, str] | None:
        """(index, marker) of the first ending marker outside strings; None: not yet."""
        ...


def partial_overlap(text: str, marker: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `marker`."""
    for size in range(min(len(text), len(marker) - 1), 0, -1):
        if marker.startswith(text[-size:]):
            return size
    return 0


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
            elif ch == "<":
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
    """Ends at `close` outside `<parameter=…>…</parameter>`, whose values are raw text."""

    _OPEN_PARAM = "<parameter="
    _CLOSE_PARAM = "</parameter>"

    def __init__(self, close: str, *, ends: tuple[str, ...] = ()) -> None:
        self._markers = (close, *ends)
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
