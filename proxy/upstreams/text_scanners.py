"""Anthropic and Gemini streams' text found by their bytes, as a Chat stream's is.

Most events of a Messages stream are text deltas that differ only in their text:
`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"fox"}}`; most
pieces of a Gemini stream are one candidate's one text part:
`{"candidates":[{"content":{"role":"model","parts":[{"text":"fox"}]},"index":0}],...}`. The
adapters' codecs make each a plain text chunk, and nothing else of their state reads or moves
for one (thinking, tool calls and the finish come in other events; a Gemini piece's usage
counts what came so far, so the codec needs only the last). So once a codec has made such a
chunk of such an event, that event's bytes before and after its text are its shape: a later
event with the same bytes around a JSON string body is the same event with other text, and
becomes part of a `Relayed` run (`proxy/upstreams/relay.py`) without being parsed or
converted (a Gemini piece's usage may hold other counts: `GeminiTextScanner`). Everything
else (thinking, tool input, a finish, errors) does not match, and goes through the codec as
before.
"""

from __future__ import annotations

import itertools

import orjson

from .base import Chunk
from .relay import TextScanner, closing_quote, string_body


class FieldTextScanner(TextScanner):
    """`TextScanner` for a provider's stream events: a shape is learned only from an event
    that starts with `start` and holds its text right after `field` (a JSON string's opening
    quote ends it), and whose bytes around the text hold none of `refused`; `silent` as
    `TextScanner`'s."""

    __slots__ = ("_field", "_refused", "_start")

    def __init__(
        self,
        start: bytes,
        field: bytes,
        silent: frozenset[bytes],
        refused: tuple[bytes, ...] = (),
    ) -> None:
        TextScanner.__init__(self, silent)
        self._start = start
        self._field = field
        self._refused = refused

    def expect(self, head: bytes, tail: bytes) -> None:
        """Take the bytes around the text of the events to come as the content's shape, told
        by the codec before any came (an Anthropic text block's start says its deltas'), when
        none was learned: those events are found by their bytes from the first on, and their
        text is never shown to the codec (the first one's body is kept in `first`). If they
        come in another shape, none matches it and the first teaches its own."""
        if not self._shapes:
            self._shapes = [(head, tail, "content", False)]

    def _foresee(self, data: bytes, chunk: Chunk) -> None:
        """Nothing: the chunk is converted, not the event's own bytes (as a Chat one is)."""

    def _learn(self, data: bytes, chunk: Chunk, key: str, text: str) -> bytes | None:
        if key != "content" or not data.startswith(self._start):
            return None
        quoted = orjson.dumps(text)
        at = data.find(self._field[:-1] + quoted)
        if at < 0:
            return None  # not compact JSON, or escaped otherwise than orjson escapes
        start = at + len(self._field)
        end = start + len(quoted) - 2
        head, tail = data[:start], data[end:]
        for word in self._refused:
            if head.find(word) >= 0 or tail.find(word) >= 0:
                return None
        self._shapes = [(head, tail, key, False)]  # it learns content alone: no other shape
        self.key = key
        return data[start:end]


_ANTHROPIC_SILENT = frozenset(
    (
        b'{"type":"ping"}',
        b'{"type": "ping"}',
        *(b'{"type":"content_block_stop","index":%d}' % index for index in range(16)),
    )
)
"""A Messages stream's events that make no chunk and that its codec keeps nothing of (it
returns none for a ping or a block's end, before reading anything else), as the service
writes them."""


def anthropic_text() -> FieldTextScanner:
    """The scanner of a Messages stream: text deltas (`text_delta`) only; pings and block
    ends skipped unparsed."""
    return FieldTextScanner(
        b'{"type":"content_block_delta",', b'"type":"text_delta","text":"', _ANTHROPIC_SILENT
    )


class GeminiTextScanner(TextScanner):
    """`TextScanner` for a Gemini stream: pieces of one candidate's one text part.

    The hosted service writes usage on every piece, counting what came so far:
    `{"candidates": [{"content": {"parts": [{"text": "fox"}],"role": "model"},"index": 0}],
    "usageMetadata": {"promptTokenCount": 5,"candidatesTokenCount": 39,…},"modelVersion": …}`.
    Such a piece is learned as its bytes before the text, those after it up to the usage
    object, the usage object's bytes other than digits, and the bytes after it: a later piece
    with the same bytes there is the same piece with other text and other counts (a number
    other than a run of digits, a field more or less, is another shape). The last found
    piece's usage is kept unparsed in `usage`, for the codec: the call's usage is the last
    piece's. A piece without usage (or compact JSON, as other servers write) is learned as
    the bytes before and after its text. A thought is never learned: it is reasoning.
    """

    __slots__ = ("_hole", "usage")

    def __init__(self) -> None:
        TextScanner.__init__(self)
        self._hole: tuple[bytes, bytes, bytes, bytes] | None = None
        """The learned piece with usage: its bytes before the text, after it up to the usage
        object, the usage object's bytes but digits, and the bytes after it."""
        self.usage: bytes | None = None
        """The usage object of the last piece `run` found (its bytes), until the codec takes
        it (a piece it reads later has its own)."""

    def text(self, data: bytes) -> bytes | None:
        if self._hole is None:
            return super().text(data)
        return self.run([data], 0)[1] or None

    def run(self, events: list[bytes], start: int) -> tuple[int, bytes, str]:
        hole = self._hole
        if hole is None:
            return TextScanner.run(self, events, start)  # (no `super()` object: once a read)
        head, mid, counts, tail = hole
        skip, keep, gap = len(head), -len(tail), len(mid)
        bodies: list[bytes] = []
        kept = b""
        for data in events[start:] if start else events:
            if data[keep:] != tail or data[:skip] != head:
                break
            at = data.rfind(mid, skip, keep)  # the last: the text may hold the bytes, escaped
            if at <= skip:  # no text (or no usage where it was)
                break
            usage = data[at + gap : keep]
            if usage.translate(None, _DIGITS) != counts:
                break
            bodies.append(data[skip:at])
            kept = usage
        found = len(bodies)
        text = b"".join(bodies)
        if text.find(b'"') >= 0 or text.find(b"\\") >= 0:
            bodies = list(itertools.takewhile(string_body, bodies))
            text = b"".join(bodies)
        if bodies:
            if len(bodies) != found:  # a body left its string: the piece before it is the last
                last = events[start + len(bodies) - 1]
                kept = last[last.rfind(mid, skip, keep) + gap : keep]
            self.key = "content"
            self.usage = kept
            if self.first is None:
                self.first = bodies[0]
        return start + len(bodies), text, "content"

    def _foresee(self, data: bytes, chunk: Chunk) -> None:
        """Nothing: the chunk is converted, not the piece's own bytes (as a Chat one is)."""

    def _learn(self, data: bytes, chunk: Chunk, key: str, text: str) -> bytes | None:
        if key != "content" or not data.startswith(b'{"candidates":'):
            return None
        at = data.find(b'"text":')
        if at < 0 or not (
            data.endswith(_FIRST_PART, 0, at) or data.endswith(_FIRST_PART_SPACED, 0, at)
        ):
            return None  # not the first part's text
        start = at + 7 + (data[at + 7 : at + 8] == b" ")
        if data[start : start + 1] != b'"':
            return None
        start += 1
        end = closing_quote(data, start)
        if end < 0 or orjson.loads(data[start - 1 : end + 1]) != text:
            return None
        head, rest = data[:start], data[end:]
        if head.find(b'"usageMetadata"') >= 0 or rest.find(b'"thought"') >= 0:
            return None
        hole: tuple[bytes, bytes, bytes, bytes] | None = None
        named = rest.find(_USAGE)
        if named >= 0:
            opening = rest.find(b"{", named)
            if opening < 0 or rest[named + len(_USAGE) : opening].strip():
                return None  # not an object
            closing = _object_end(rest, opening)
            if closing < 0 or rest.find(_USAGE, closing) >= 0:
                return None
            usage = rest[opening:closing]
            hole = (head, rest[:opening], usage.translate(None, _DIGITS), rest[closing:])
        self._hole = hole
        self._shapes = [] if hole is not None else [(head, rest, key, False)]
        self.key = key
        return data[start:end]


_DIGITS = b"0123456789"
_USAGE = b'"usageMetadata":'
_FIRST_PART = b'"parts":[{'
_FIRST_PART_SPACED = b'"parts": [{'


def _object_end(data: bytes, opening: int) -> int:
    """Where the JSON object opening at `opening` ends (just after its closing brace), or -1,
    also when a string in it holds a brace or an escape (a usage object's never do)."""
    depth, at = 0, opening
    while depth or at == opening:
        close = data.find(b"}", at)
        if close < 0:
            return -1
        depth += data.count(b"{", at, close) - 1
        at = close + 1
    found = data[opening:at]
    strings = b"".join(found.split(b'"')[1::2])
    if found.find(b"\\") >= 0 or strings.find(b"{") >= 0 or strings.find(b"}") >= 0:
        return -1
    return at


def gemini_text() -> GeminiTextScanner:
    """The scanner of a Gemini stream: pieces of one text part, without thought."""
    return GeminiTextScanner()
