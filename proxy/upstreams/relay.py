"""Streamed text kept as the upstream's bytes: found by a scan, parsed once per network read.

Most events of a Chat Completions stream differ only in their text:
`{"id":…,"choices":[{"index":0,"delta":{"content":"fox"},"logprobs":null,"finish_reason":null}]}`.
The first such event of a response is parsed and teaches a `TextScanner` its shape: the bytes
before its text and the bytes after it. A later event that starts and ends with those same
bytes, and whose middle is one JSON string body (no quote that would end it, no backslash left
dangling), is that same chunk with other text; it is never parsed. Reasoning text
(`reasoning_content`, or `reasoning`) is learned alike, as a second shape. A run of one kind
becomes one `Relayed` chunk holding their string bodies joined, which is the JSON string body
of their joined text: the Chat front writes those bytes into its own frame as they are.
Anything else (a role, tool calls, a finish reason, log-probabilities, usage, an error, a
field that changed) does not match and is parsed as before.

Bytes are searched with `find`, never `in`: CPython 3.11's `in` on bytes first tries the needle
as an integer and formats the TypeError that fails, about 1.5k instructions a check, where
`find` takes the bytes at once (five times faster, and two checks an event).
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson

from .base import Chunk

_TEXT_TOP = frozenset(
    {
        "id",
        "object",
        "created",
        "model",
        "choices",
        "system_fingerprint",
        "service_tier",  # OpenAI's, as the next
        "obfuscation",
    }
)
_TEXT_TOP_USAGE = _TEXT_TOP | {"usage"}
"""The usual fields of a text chunk, `usage` null among them (as OpenAI and vLLM send it)."""
_TEXT_CHOICE = frozenset({"index", "delta", "logprobs", "finish_reason"})
_MAX_MISSES = 8
_OBFUSCATION = b',"obfuscation":"'
"""OpenAI pads each stream event with a random string in its last field, which no reader
uses: a shape learned from such an event is matched without it."""
TEXT_KEYS = ("content", "reasoning_content", "reasoning")
"""The delta fields whose text is relayed (both reasoning names render as `reasoning_content`)."""
_KEYS = {key: b'"' + key.encode() + b'":"' for key in TEXT_KEYS}
_KEY_NAMES = {key: key for key in TEXT_KEYS}  # the parsed name, as the one constant
_OPENING = {"role": "assistant", "content": ""}
"""The delta of the chunk most Chat streams open with."""
_OPENING_BYTES = b'{"role":"assistant","content":""}'
_NO_EVENTS: frozenset[bytes] = frozenset()


class Relayed(dict[str, Any]):
    """A chunk standing for a run of text-only events of one kind (`key`: content or
    reasoning): a plain Chat chunk holding their joined text (for any reader), and `raw`,
    that text as the upstream's own JSON string body (without its quotes), which the Chat
    front sends as it is.

    Copying it (`{**c}`, as any adapter that rewrites a chunk does) yields a plain dict, so
    rewritten text is never relayed.

    Raises:
        orjson.JSONDecodeError: `raw` is not a JSON string body (a control character, bad
            UTF-8): parsing each run once is what keeps bad bytes from the client.
    """

    __slots__ = ("ending", "key", "raw", "text")

    def __init__(self, raw: bytes, key: str = "content") -> None:
        text: str = orjson.loads(b'"' + raw + b'"')
        self["choices"] = [{"index": 0, "delta": {key: text}, "finish_reason": None}]
        self.key = key
        self.raw = raw
        self.text = text
        self.ending = False
        """The stream ended in the network read that brought this text (`[DONE]` came in it):
        whatever follows comes without a wait."""


class TextScanner:
    """Recognises the text-only events of one streamed response by their bytes: one learned
    shape per kind of text (content, reasoning).

    A subclass's `__init__` calls this one by name: a `super()` object costs about 1k
    instructions, and a scanner is made for every stream."""

    __slots__ = ("_shapes", "first", "key", "misses", "silent")

    def __init__(self, silent: frozenset[bytes] = _NO_EVENTS) -> None:
        self.silent = silent
        """Events that make no chunk and change nothing of their codec's, byte for byte (an
        Anthropic ping): the transport skips them unparsed."""
        self.misses = 0
        """Chunks that may have been text the scanner did not learn (text whose shape could
        not be learned, not compact JSON, say; once it stopped looking, every chunk): while
        this stays the same, each text-only chunk it was shown became relayed text. An
        attribute, not a property: the transport reads it twice a network read."""
        self._shapes: list[tuple[bytes, bytes, str, bool]] = []
        self.key = "content"
        """The kind of text `text` last found (a name in `TEXT_KEYS`)."""
        self.first: bytes | None = None
        """The JSON string body of the first event `run` found: text its codec was never shown
        (a codec that foretold the shape, `FieldTextScanner.expect`, reads it from here)."""

    def text(self, data: bytes) -> bytes | None:
        """The JSON string body of the event's text, when the event is, byte for byte, a
        learned chunk with other (non-empty) text (its kind then in `key`); else None."""
        for head, tail, key, padded in self._shapes:
            if padded:
                data = _unpadded(data)  # type: ignore[assignment]
                if data is None:
                    return None
            if data.startswith(head) and data.endswith(tail):
                body = data[len(head) : len(data) - len(tail)]
                if not body:
                    return None
                if body.find(b"\\") >= 0:
                    if not string_body(body):
                        return None
                elif body.find(b'"') >= 0:
                    return None
                self.key = key
                return body
        return None

    def run(self, events: list[bytes], start: int) -> tuple[int, bytes, str]:
        """The run of events from `start` on that `text` finds, as long as they are of one
        kind: where it ends, the JSON string body of its text (their bodies joined; empty:
        `events[start]` is not a learned text event), and its kind.

        One call per run of a read's events, not per event (a Python call costs about what
        the byte checks do). With the one shape most streams teach, unpadded, each event is
        checked by two slices compared (in CPython 3.11 a bytes method such as `startswith` or
        `find` costs more than a slice and a comparison: its arguments are parsed from a
        tuple), and the bodies for quotes and backslashes once, joined; any other case asks
        `text` event by event.
        """
        shapes = self._shapes
        if len(shapes) == 1 and not shapes[0][3]:
            head, tail, key, _ = shapes[0]
            skip, keep = len(head), -len(tail)  # a tail is never empty: it ends a string
            least = skip - keep  # the head and the tail, with no text between
            data = events[start]
            if len(data) <= least or data[keep:] != tail or data[:skip] != head:
                return start, b"", key  # not a text event: the usual answer, found at once
            bodies: list[bytes] = [data[skip:keep]]
            for data in events[start + 1 :]:
                if len(data) <= least or data[keep:] != tail or data[:skip] != head:
                    break
                bodies.append(data[skip:keep])
            text = b"".join(bodies)
            if text.find(b'"') >= 0 or text.find(b"\\") >= 0:
                # Some body holds a quote or an escape: each one checked, up to the first
                # that would leave its string.
                bodies = list(itertools.takewhile(string_body, bodies))
                text = b"".join(bodies)
            if bodies:
                self.key = key
                if self.first is None:
                    self.first = bodies[0]
            return start + len(bodies), text, key
        if not shapes:  # none learned yet (a stream's first events): nothing to find
            return start, b"", self.key
        at, count = start, len(events)
        found_bodies: list[bytes] = []
        key = self.key
        while at < count:
            found = self.text(events[at])
            if found is None or (found_bodies and self.key != key):
                self.key = key  # the run's kind, not that of the event after it
                break
            key = self.key
            found_bodies.append(found)
            at += 1
        if found_bodies and self.first is None:
            self.first = found_bodies[0]
        return at, b"".join(found_bodies), key

    def learn(self, data: bytes, chunk: Chunk) -> bytes | None:
        """Learn the shape of `data` when its parsed `chunk` carries nothing but non-empty
        text of one kind; return that text's JSON string body (else None, learning nothing).
        The kind is then in `key`. A stream whose text events keep failing to teach a
        shape is not looked at any more (each chunk then counts as a miss: see `misses`)."""
        if self.misses >= _MAX_MISSES:
            self.misses += 1
            return None
        found = _text_of(chunk)
        if found is None:
            if not self._shapes:
                self._foresee(data, chunk)
            return None
        key, text = found
        body = self._learn(data, chunk, key, text)
        if body is None:
            self.misses += 1
        return body

    def _foresee(self, data: bytes, chunk: Chunk) -> None:
        """Foresee the content's shape from a stream's opening chunk (vLLM's, SGLang's, ...:
        `"delta":{"role":"assistant","content":""}` and nothing else with a value), so that
        the first text event is found by its bytes too instead of parsed to teach it: the same
        bytes with `{"content":"…"}` for that delta. An event of that shape is a text-only
        chunk (its other bytes are the opening's, which says nothing else); if the stream's
        text comes in another shape, none matches it and its first text teaches that one."""
        choices = chunk.get("choices")
        if choices.__class__ is not list or len(choices) != 1:
            return
        choice = choices[0]
        if (
            choice.__class__ is not dict
            or choice.get("delta") != _OPENING
            or choice.get("index") != 0
            or chunk.get("obfuscation") is not None
            or not _nothing_beside(chunk, choice)
        ):
            return
        at = data.find(_OPENING_BYTES)
        if at >= 0:  # else not compact JSON
            tail = data[at + len(_OPENING_BYTES) :]
            self._shapes = [(data[:at] + b"{" + _KEYS["content"], b'"}' + tail, "content", False)]

    def _learn(self, data: bytes, chunk: Chunk, key: str, text: str) -> bytes | None:
        padded = chunk.get("obfuscation") is not None
        if padded:
            data = _unpadded(data)  # type: ignore[assignment]
            if data is None:
                return None
        start = data.find(_KEYS[key])
        if start < 0:
            return None  # not compact JSON: no shape to match
        start += len(_KEYS[key])
        end = closing_quote(data, start)
        if end < 0:
            return None
        body = data[start:end]  # inside its string: it ends at the first unescaped quote
        if orjson.loads(data[start - 1 : end + 1]) != text:
            return None
        shapes = self._shapes
        if shapes:
            shapes = [shape for shape in shapes if shape[2] != key]
        self._shapes = [(data[:start], data[end:], key, padded), *shapes]
        self.key = key
        return body


def _unpadded(data: bytes) -> bytes | None:
    """The event without OpenAI's padding field (its last: `,"obfuscation":"…"}`), or None
    when it has none (or one that is not a plain string)."""
    cut = data.rfind(_OBFUSCATION)
    if cut < 0 or not data.endswith(b'"}'):
        return None
    pad = data[cut + len(_OBFUSCATION) : -2]
    if pad.find(b'"') >= 0 or pad.find(b"\\") >= 0:
        return None
    return data[:cut] + b"}"


def string_body(body: bytes) -> bool:
    """Whether `body` stays inside one JSON string: every quote in it escaped and no escape
    left open at its end (escaped backslashes taken out first, then escaped quotes)."""
    if body.find(b"\\") < 0:
        return body.find(b'"') < 0
    rest = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    return rest.find(b'"') < 0 and not rest.endswith(b"\\")


def closing_quote(data: bytes, start: int) -> int:
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


def _text_of(chunk: Chunk) -> tuple[str, str] | None:
    """The chunk's text field and its text when it carries nothing else that any reader
    would see (one choice, index 0, no finish, no log-probabilities, no other delta field or
    top-level field with a value).

    The delta is looked at first: the chunks that are not text (a role, a finish, usage)
    mostly differ there, or have no one choice, and are told apart before the rest is read."""
    choices = chunk.get("choices")
    if choices.__class__ is not list or len(choices) != 1:
        return None
    choice = choices[0]
    if choice.__class__ is not dict:
        return None
    delta = choice.get("delta")
    if delta.__class__ is not dict:
        return None
    found = None
    for name, value in delta.items():
        if value is None or (name == "role" and value == "assistant"):
            continue  # a repeated role (Ollama sends one in every chunk) shows nowhere
        key = _KEY_NAMES.get(name)
        if found is not None or key is None or value.__class__ is not str or not value:
            return None
        found = (key, value)
    if found is None or choice.get("index") != 0 or not _nothing_beside(chunk, choice):
        return None
    return found


def _nothing_beside(chunk: Chunk, choice: dict[str, Any]) -> bool:
    """Whether the chunk and its one choice hold no field with a value beyond the usual ones
    (the text's own), looked at by their names at once when they are the usual ones."""
    if not (
        choice.keys() <= _TEXT_CHOICE
        and choice.get("finish_reason") is None
        and choice.get("logprobs") is None
    ):
        for name, value in choice.items():
            if value is not None and name not in ("index", "delta"):
                return False
    if not (chunk.keys() <= _TEXT_TOP_USAGE and chunk.get("usage") is None):
        for name, value in chunk.items():
            if value is not None and name not in _TEXT_TOP:
                return False
    return True
