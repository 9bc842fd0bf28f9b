"""Anthropic and Gemini streams' text found by their bytes, as a Chat stream's is.

Most events of a Messages stream are text deltas that differ only in their text:
`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"fox"}}`; most
pieces of a Gemini stream are one candidate's one text part:
`{"candidates":[{"content":{"role":"model","parts":[{"text":"fox"}]},"index":0}],...}`. The
adapters' codecs make each a plain text chunk, and nothing else of their state reads or moves
for one (thinking, tool calls, usage and the finish come in other events; a Gemini piece with
usage goes to rosetta, which sums it). So once a codec has made such a chunk of such an event,
that event's bytes before and after its text are its shape: a later event with the same bytes
around a JSON string body is the same event with other text, and becomes part of a `Relayed`
run (`proxy/upstreams/relay.py`) without being parsed or converted. Everything else
(thinking, tool input, a piece with usage or a finish, errors) does not match, and goes
through the codec as before.
"""

from __future__ import annotations

import orjson

from .base import Chunk
from .relay import TextScanner

_GEMINI_REFUSED = (b'"usageMetadata"', b'"thought"')
"""A Gemini piece with usage goes to rosetta (which sums it); a thought is reasoning."""


class FieldTextScanner(TextScanner):
    """`TextScanner` for a provider's stream events: a shape is learned only from an event
    that starts with `start` and holds its text right after `field` (a JSON string's opening
    quote ends it), and whose bytes around the text hold none of `refused`."""

    __slots__ = ("_field", "_refused", "_start")

    def __init__(self, start: bytes, field: bytes, refused: tuple[bytes, ...] = ()) -> None:
        super().__init__()
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
    scanner = FieldTextScanner(b'{"type":"content_block_delta",', b'"type":"text_delta","text":"')
    scanner.silent = _ANTHROPIC_SILENT
    return scanner


def gemini_text() -> FieldTextScanner:
    """The scanner of a Gemini stream: pieces of one text part, without usage or thought."""
    return FieldTextScanner(b'{"candidates":[{', b'"parts":[{"text":"', _GEMINI_REFUSED)
