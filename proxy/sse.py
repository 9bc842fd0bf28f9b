"""Server-sent events: decoding an upstream byte stream, encoding frames for the client.

The only module that knows SSE framing.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

DONE = b"data: [DONE]\n\n"


class SSEDecodeError(Exception):
    """The byte stream is not usable SSE (a line past the size limit)."""


def encode(payload: Any) -> bytes:
    """One `data:` frame holding `payload` as JSON."""
    return b"data: " + orjson.dumps(payload) + b"\n\n"


_FINISHES = {
    reason: orjson.dumps(reason) for reason in ("stop", "length", "tool_calls", "content_filter")
}
"""Chat's finish reasons as JSON, made once."""
_CHUNK_HEAD = (
    b'data: {"id":%b,"object":"chat.completion.chunk","created":%d,"model":%b,'
    b'"choices":[{"index":0,"delta":'
)
"""`ChoiceEncoder.chunks`' frame head."""


class ChoiceEncoder:
    """Frames of one chat completion stream: a fixed head, then one choice's delta.

    Every chunk of a response shares its id, created and model; the head is serialized
    once, so a frame costs one small JSON dump of the delta.
    """

    __slots__ = ("_prefix",)

    def __init__(self, head: dict[str, Any]) -> None:
        self._prefix = b"data: " + orjson.dumps(head)[:-1] + b',"choices":[{"index":0,"delta":'

    @classmethod
    def chunks(cls, id: str, created: int, model: str) -> ChoiceEncoder:
        """The encoder of a `chat.completion.chunk` stream: the one of the head `{"id": id,
        "object": "chat.completion.chunk", "created": created, "model": model}`, its bytes
        made in one format rather than a dict's dump."""
        encoder = cls.__new__(cls)
        encoder._prefix = _CHUNK_HEAD % (orjson.dumps(id), created, orjson.dumps(model))
        return encoder

    def frame(
        self,
        delta: dict[str, Any],
        finish_reason: str | None = None,
        *,
        logprobs: dict[str, Any] | None = None,
    ) -> bytes:
        """One `data:` frame carrying `delta` and, when given, the finish reason and the
        choice's log-probabilities."""
        finish = b"null" if finish_reason is None else orjson.dumps(finish_reason)
        extra = b"" if logprobs is None else b',"logprobs":' + orjson.dumps(logprobs)
        return (
            self._prefix + orjson.dumps(delta) + extra + b',"finish_reason":' + finish + b"}]}\n\n"
        )

    def opening(self) -> bytes:
        """The frame `frame({"role": "assistant", "content": ""})` makes: a response's first."""
        return self._prefix + b'{"role":"assistant","content":""},"finish_reason":null}]}\n\n'

    def ending(self, finish_reason: str) -> bytes:
        """The frame `frame({}, finish_reason)` makes: a response's last choice."""
        finish = _FINISHES.get(finish_reason)
        if finish is None:
            finish = orjson.dumps(finish_reason)
        return self._prefix + b'{},"finish_reason":' + finish + b"}]}\n\n"

    def text(self, body: bytes, reasoning: bool = False) -> bytes:
        """The frame `frame({"content": text})` makes (`reasoning`: with the text as
        `reasoning_content`), from the text's JSON string body (escaped, without its quotes)
        as an upstream sent it."""
        key = b'{"reasoning_content":"' if reasoning else b'{"content":"'
        return self._prefix + key + body + b'"},"finish_reason":null}]}\n\n'


def event(kind: str, payload: Any) -> bytes:
    """One frame with an `event:` line naming its type and a `data:` line holding `payload`."""
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def event_json(kind: str, data: bytes) -> bytes:
    """A frame as `event` makes it, from a payload already serialized as JSON."""
    return b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n"


def comment(text: str = "keep-alive") -> bytes:
    """A comment frame: clients ignore it, proxies see traffic."""
    return b": " + text.encode() + b"\n\n"


class SSEDecoder:
    """Incremental decoder: feed it bytes as they arrive, get the data of complete events.

    Handles events split anywhere across reads (UTF-8 included), CRLF line ends, comments,
    and `event:`/`id:` fields, which are ignored.
    """

    def __init__(self, *, max_line: int = 8 * 1024 * 1024) -> None:
        self._max_line = max_line
        self._buffer = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[str]:
        """The data of every event completed by `chunk`.

        Raises:
            SSEDecodeError: a line grows past the size limit.
            UnicodeDecodeError: an event's data is not UTF-8.
        """
        return [data.decode("utf-8") for data in self.feed_bytes(chunk)]

    def close(self) -> list[str]:
        """The data of an event the stream ended without a blank line after."""
        return [data.decode("utf-8") for data in self.close_bytes()]

    def feed_bytes(self, chunk: bytes) -> list[bytes]:
        """`feed`, each event's data left as bytes (as JSON parsers and byte scans take it).

        Raises:
            SSEDecodeError: a line grows past the size limit.
        """
        # `find`, not `in`: bytes' `in` costs a formatted TypeError per check (see
        # upstreams/relay.py), and this runs once per event.
        buffer = self._buffer + chunk
        if buffer.find(b"\r") >= 0:
            whole = None if self._data else _crlf_plain(buffer)
            if whole is not None:
                self._buffer = b""
                return whole
            buffer = _lf(buffer)
        if not self._data:
            whole = self._whole(buffer)
            if whole is not None:
                return whole
        if chunk.find(b"\n") < 0:
            # The last line's length: a whole line of an event begun may be kept before it.
            if len(buffer) - 1 - buffer.rfind(b"\n") > self._max_line:
                raise SSEDecodeError(f"an event line exceeds {self._max_line} bytes")
            self._buffer = buffer
            return []
        events: list[bytes] = []
        if not self._data and buffer.find(b"\r") < 0:
            # The common shape, `data: {...}` and a blank line, taken event by event.
            *blocks, buffer = buffer.split(b"\n\n")
            for block in blocks:
                if block.startswith(b"data: ") and block.find(b"\n") < 0:
                    events.append(block[6:])
                else:
                    self._block(block, events)
            if buffer.find(b"\n") < 0:
                self._buffer = buffer
                return events
        *lines, self._buffer = buffer.split(b"\n")
        for line in lines:
            self._line(line.rstrip(b"\r"), events)
        return events

    def _whole(self, buffer: bytes) -> list[bytes] | None:
        """The data of the complete events in `buffer`, when each is of one of the shapes
        most streams have (`_plain`, `_headed`) and what follows is the start of an event of
        at most two whole lines (kept unread: a read that cuts an event leaves the next to
        begin with it, so that both are read whole), its last line within the limit; else
        None. Called with no event begun."""
        end = buffer.rfind(b"\n\n")
        kept = end + 2
        if end < 0:
            kept = 0
        elif end == 0 or buffer.find(b"\r", 0, end) >= 0:
            return None
        line = buffer.find(b"\n", kept)
        if line >= 0:
            line = buffer.find(b"\n", line + 1)
            if line >= 0 and buffer.find(b"\n", line + 1) >= 0:
                return None
        if not kept:  # no event ends here: the line read last is the one that may grow
            if len(buffer) - 1 - buffer.rfind(b"\n") > self._max_line:
                return None
            self._buffer = buffer
            return []
        events = _plain(buffer, end) if buffer.startswith(b"data: ") else None
        if events is None:
            events = _headed(buffer, end)
        if events is not None:
            self._buffer = buffer[end + 2 :]
        return events

    def _block(self, block: bytes, events: list[bytes]) -> None:
        """A whole event in any other shape (comments, `event:` lines, several data lines)."""
        for line in block.split(b"\n"):
            self._line(line, events)
        self._line(b"", events)

    def close_bytes(self) -> list[bytes]:
        """`close`, the data left as bytes."""
        events: list[bytes] = []
        if self._buffer:
            for line in self._buffer.split(b"\n"):  # an event's line may be kept whole
                self._line(line.rstrip(b"\r"), events)
            self._buffer = b""
        self._line(b"", events)
        return events

    def _line(self, line: bytes, events: list[bytes]) -> None:
        if not line:
            if self._data:
                events.append(b"\n".join(self._data))
                self._data = []
        elif line.startswith(b"data:"):
            value = line[5:]
            self._data.append(value[1:] if value.startswith(b" ") else value)


def _lf(buffer: bytes) -> bytes:
    """`buffer` with its complete lines' CRLF ends (Gemini's) made LF at once, as `_line`
    would take the CR off each line (a line's other CRs stay, and keep it off the fast
    paths); the partial line is kept as it came."""
    cut = buffer.rfind(b"\n") + 1
    return buffer[:cut].replace(b"\r\n", b"\n") + buffer[cut:] if cut else buffer


def _crlf_plain(buffer: bytes) -> list[bytes] | None:
    """The data of the events in `buffer` when it is whole events of one `data: ` line each
    with CRLF line ends (Gemini's usual read); else None. One split at the separators, the
    bytes left holding no CR or LF, rather than the CRLFs made LF first (another copy and
    scan of the read) and the LF shape's steps."""
    if not buffer.endswith(b"\r\n\r\n") or not buffer.startswith(b"data: "):
        return None
    events = buffer[6:-4].split(b"\r\n\r\ndata: ")
    joined = b"".join(events)
    return events if joined.find(b"\r") < 0 and joined.find(b"\n") < 0 else None


def _plain(buffer: bytes, end: int) -> list[bytes] | None:
    """The data of the events before `end` when each is one `data: ` line and a blank line
    (OpenAI's, Gemini's): one split for them all, each event's checks made once on the whole
    (its lines are the split's separators, two newlines each, and nothing else); else None."""
    plain = buffer[6:end].split(b"\n\ndata: ")
    # No newline but the separators': one search of the events joined (counting newlines
    # instead reads the bytes one at a time, five times slower).
    return plain if b"".join(plain).find(b"\n") < 0 else None


_HEADED = re.compile(rb"(?!data:)[^\n]*\ndata: ([^\n]*)\n\n")
"""An event of one other line (`event:`, `id:`, a comment; not `data:`) and one `data: `
line; its group, the data."""
_DELTAS = b"\n\nevent: content_block_delta\ndata: "
"""What comes between the data of two events of the kind most headed streams are made of
(Anthropic's deltas): a run of them is split at it at once."""


def _headed(buffer: bytes, end: int) -> list[bytes] | None:
    """The data of the events up to `end` when each is one line that is not data (Anthropic's
    `event:` line, an `id:`, a comment), one `data: ` line and a blank line; else None.

    A run of deltas (`_DELTAS`) is split at their separator, their data the pieces between
    (no newline in them but the one that ends the last); the events before and after the run
    are split by `_headed_split`. (One regular expression over the whole read costs about
    5 instructions a byte, most of its bytes the deltas'; a search for the separator, 2.)"""
    if end < 900:  # too short for eight deltas: the split would cost more than it saves
        return _headed_split(buffer[: end + 2])
    pieces = buffer[: end + 2].split(_DELTAS)
    if len(pieces) < 8:  # a short run saves less than the second split costs
        return _headed_split(buffer[: end + 2])
    last = pieces.pop()
    cut = last.find(b"\n")  # the last delta's data ends here, and its event with a blank line
    deltas = pieces[1:]
    if b"".join(deltas).find(b"\n") >= 0 or last[cut + 1 : cut + 2] != b"\n":
        return None
    events = _headed_split(pieces[0] + b"\n\n")
    rest = _headed_split(last[cut + 2 :]) if cut + 2 < len(last) else []
    if events is None or rest is None:
        return None
    events += deltas
    events.append(last[:cut])
    events += rest
    return events


def _headed_split(events: bytes) -> list[bytes] | None:
    """The data of `events` (whole events, the last ending with a blank line) when each is of
    `_headed`'s shape; else None. One regular expression split of the bytes, not three lines'
    steps an event: the events are its separators (their data its groups), and nothing may be
    left between them. (A check of the whole and then a search for the data lines read every
    byte twice, and the check's repetition kept a backtracking frame per event.)"""
    parts = _HEADED.split(events)
    return None if any(parts[::2]) else parts[1::2]
