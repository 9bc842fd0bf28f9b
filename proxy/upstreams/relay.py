"""Streamed text kept as the upstream's bytes: found by a scan, parsed once per network read.

Most events of a Chat Completions stream differ only in their text:
`{"id":…,"choices":[{"index":0,"delta":{"content":"fox"},"logprobs":null,"finish_reason":null}]}`.
The first such event of a response is parsed and teaches a `TextScanner` its shape: the bytes
before its text and the bytes after it. A later event that starts and ends with those same
bytes, and whose middle is one JSON string body (no quote that would end it, no backslash left
dangling), is that same chunk with other text; it is never parsed. A run of them becomes one
`Relayed` chunk holding their string bodies joined, which is the JSON string body of their
joined text: the Chat front writes those bytes into its own frame as they are. Anything else
(a role, tool calls, a finish reason, log-probabilities, usage, an error, a field that changed)
does not match and is parsed as before.
"""

from __future__ import annotations

from typing import Any

import orjson

from .base import Chunk

_KEY = b'"content":"'
_TEXT_TOP = frozenset({"id", "object", "created", "model", "choices", "system_fingerprint"})


class Relayed(dict[str, Any]):
    """A chunk standing for a run of text-only content events: a plain Chat chunk holding
    their joined text (for any reader), and `raw`, that text as the upstream's own JSON string
    body (without its quotes), which the Chat front sends as it is.

    Copying it (`{**c}`, as any adapter that rewrites a chunk does) yields a plain dict, so
    rewritten text is never relayed.
    """

    __slots__ = ("raw", "text")

    def __init__(self, raw: bytes) -> None:
        text: str = orjson.loads(b'"' + raw + b'"')
        super().__init__(choices=[{"index": 0, "delta": {"content": text}, "finish_reason": None}])
        self.raw = raw
        self.text = text


class TextScanner:
    """Recognises the text-only content events of one streamed response by their bytes."""

    __slots__ = ("_head", "_tail")

    def __init__(self) -> None:
        self._head: bytes | None = None
        self._tail = b""

    def text(self, data: bytes) -> bytes | None:
        """The JSON string body of the event's text, when the event is, byte for byte, the
        learned chunk with other (non-empty) text; else None."""
        head = self._head
        if head is None or not data.startswith(head):
            return None
        tail = self._tail
        if not data.endswith(tail):
            return None
        body = data[len(head) : len(data) - len(tail)]
        return body if body and string_body(body) else None

    def learn(self, data: bytes, chunk: Chunk) -> bytes | None:
        """Learn the shape of `data` when its parsed `chunk` carries nothing but non-empty
        content; return that content's JSON string body (else None, learning nothing)."""
        text = _content_of(chunk)
        if text is None:
            return None
        start = data.find(_KEY)
        if start < 0:
            return None  # not compact JSON: no shape to match
        start += len(_KEY)
        end = _closing_quote(data, start)
        if end < 0:
            return None
        body = data[start:end]
        if not string_body(body) or orjson.loads(data[start - 1 : end + 1]) != text:
            return None
        self._head, self._tail = data[:start], data[end:]
        return body


def string_body(body: bytes) -> bool:
    """Whether `body` stays inside one JSON string: every quote in it escaped and no escape
    left open at its end (escaped backslashes taken out first, then escaped quotes)."""
    if b"\\" not in body:
        return b'"' not in body
    rest = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b'"' not in rest and not rest.endswith(b"\\")


def _closing_quote(data: bytes, start: int) -> int:
    """Where the JSON string whose body starts at `start` ends (its closing quote), or -1."""
    at = data.find(b'"', start)
    while at >= 0:
        slashes = 0
        while data[at - 1 - slashes] == 0x5C:  # a backslash
            slashes += 1
        if slashes % 2 == 0:
            return at
        at = data.find(b'"', at + 1)
    return -1


def _content_of(chunk: Chunk) -> str | None:
    """The chunk's content when it carries nothing else that any reader would see (one
    choice, index 0, no finish, no log-probabilities, no other delta field or top-level field
    with a value)."""
    for name, value in chunk.items():
        if value is not None and name not in _TEXT_TOP:
            return None
    choices = chunk.get("choices")
    if choices.__class__ is not list or len(choices) != 1:
        return None
    choice = choices[0]
    if choice.__class__ is not dict or choice.get("index") != 0:
        return None
    for name, value in choice.items():
        if value is not None and name not in ("index", "delta"):
            return None
    delta = choice.get("delta")
    if delta.__class__ is not dict:
        return None
    content = None
    for name, value in delta.items():
        if name == "content":
            content = value
        elif value is not None and (name != "role" or value != "assistant"):
            return None  # a repeated role (Ollama sends one in every chunk) shows nowhere
    return content if content.__class__ is str and content else None
