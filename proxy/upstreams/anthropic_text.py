"""An Anthropic Messages stream's text deltas found by their bytes, as a Chat stream's are.

Most events of a Messages stream are text deltas that differ only in their text:
`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"fox"}}`. The
Anthropic codec makes each a plain text chunk, and nothing else of its state reads or moves
for one (thinking, usage and the stop reason come in other events). So once the codec has made
such a chunk of a text delta, that event's bytes before and after its text are its shape: a
later event with the same bytes around a JSON string body is the same delta with other text,
and becomes part of a `Relayed` run (`proxy/upstreams/relay.py`) without being parsed or
converted. Thinking deltas (whose signatures the codec keeps), tool input, errors and every
other event do not match, and go through the codec as before.
"""

from __future__ import annotations

import orjson

from .base import Chunk
from .relay import TextScanner

_TEXT_DELTA = b'{"type":"content_block_delta",'
_TEXT_FIELD = b'"type":"text_delta","text":"'


class AnthropicTextScanner(TextScanner):
    """`TextScanner` for Messages stream events: a shape is learned from a text delta only,
    its text found in the delta's `text` field."""

    __slots__ = ()

    def _learn(self, data: bytes, chunk: Chunk, key: str, text: str) -> bytes | None:
        if key != "content" or not data.startswith(_TEXT_DELTA):
            return None
        quoted = orjson.dumps(text)
        at = data.find(_TEXT_FIELD[:-1] + quoted)
        if at < 0:
            return None  # not compact JSON, or escaped otherwise than orjson escapes
        start = at + len(_TEXT_FIELD)
        end = start + len(quoted) - 2
        shapes = [shape for shape in self._shapes if shape[2] != key]
        self._shapes = [(data[:start], data[end:], key, False), *shapes]
        self.key = key
        return data[start:end]
