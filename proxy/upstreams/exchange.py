"""One completion exchange with an upstream: its answer read as Chat chunks, streamed (SSE
decoded as the reads deliver it, text-only events relayed by their bytes, a stream cut short
asked for once more) or whole (an unstreamed body, read to its end and given to the codec).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType

import orjson

from registry import http1

from .. import sse
from ..errors import UpstreamError, UpstreamTimeoutError
from .base import Chunk, Codec, Fault, Relayable, filled
from .coalescing import coalesce
from .failures import broke_off, fault_error
from .relay import Relayed, TextScanner

MAX_BODY = 64 * 1024 * 1024
_CUT = "the upstream stream ended before the answer was complete"


class Exchange:
    """One completion request as an async context manager: its live response, a second try
    for an empty stream, and the credential it carried, which no error message may show.

    A class, not an `asynccontextmanager`: every upstream call enters one, and the
    generator machinery costs a measurable share of a request.
    """

    def __init__(
        self,
        name: str,
        send: Callable[[], Awaitable[http1.Response]],
        codec: Callable[[], Codec],
        *,
        stream: bool,
        credential: str,
    ) -> None:
        self.name = name
        self._send = send
        """Sends the request (again), its answer's status checked (`Transport._open`)."""
        self._codec = codec
        self._stream = stream
        self._credential = credential
        self._response: http1.Response | None = None
        self._read = False
        """The answer's content was read to its end (a stream's `[DONE]`)."""
        self.first_chunk_at: float | None = None
        """When the stream's first chunk was read (`perf_counter`); None before."""

    async def __aenter__(self) -> AsyncIterator[Chunk]:
        try:
            response = await self.open()
        except BaseException:
            self.close()
            raise
        return self.chunks(response) if self._stream else self._replay(response)

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    async def open(self) -> http1.Response:
        """Send the request (again) and check its status.

        Raises:
            UpstreamError, UpstreamTimeoutError, UpstreamStatusError: as `Transport.exchange`.
        """
        self.close()
        response = self._response = await self._send()
        return response

    def close(self) -> None:
        """Release the current response's connection (kept for the next request when its
        answer was read to the end)."""
        if self._response is not None:
            if self._read:
                self._response.release()
            else:
                self._response.close()
            self._response = None

    async def chunks(self, response: http1.Response) -> AsyncIterator[Chunk]:
        """The streamed chunks, up to `[DONE]` or the end of a stream that finished its answer.

        A stream that ends without `[DONE]` and before its codec saw the answer's end was cut
        short: it is asked for once more when nothing reached the caller yet. With a codec
        that has a `scanner`, text-only events are found by their bytes and arrive as
        `Relayed`, a run of them in one network read as one; any other text deltas of one read
        arrive merged (`coalesce`). When the first
        chunk is read, `first_chunk_at` notes the time (`perf_counter`), so a meter need not
        wrap this generator to see it.

        One generator for the attempts and the reads: each layer of async generator costs
        a resumption per chunk.

        Raises:
            UpstreamError: the stream broke off, sent something unusable or was cut short (502).
            UpstreamTimeoutError: the stream stalled (504).
        """
        for attempt in range(2):
            if attempt:
                response = await self.open()
            codec = self._codec()
            scanner: TextScanner | None = getattr(codec, "scanner", None)
            decoder = sse.SSEDecoder()
            try:
                while raw := await response.read_any():
                    chunks, done = self._decode(codec, scanner, decoder.feed_bytes(raw))
                    for chunk in chunks:
                        yield chunk
                    if done:
                        self._read = True
                        return
                tail = decoder.close_bytes()
            except TimeoutError as exc:
                raise UpstreamTimeoutError(f"upstream {self.name!r} stalled") from exc
            except (http1.HTTPError, sse.SSEDecodeError) as exc:
                raise self._broke_off(exc) from exc
            chunks, done = self._decode(codec, scanner, tail)
            for chunk in chunks:
                yield chunk
            if done or codec.finished:
                return
            if self.first_chunk_at is not None:
                break  # chunks reached the caller: the request may not be sent again
        raise UpstreamError(f"{_CUT} (upstream {self.name!r})")

    def _decode(
        self, codec: Codec, scanner: TextScanner | None, events: list[bytes]
    ) -> tuple[list[Chunk], bool]:
        """The chunks of these events, and whether `[DONE]` ended them; each run of one kind
        of text-only events that the scanner knows becomes one `Relayed` chunk, never parsed
        (found a run at a time: `TextScanner.run`), marked `ending` when `[DONE]` came in the
        same read. The first chunks of the exchange note `first_chunk_at`."""
        chunks: list[Chunk] = []
        texts: list[bytes] = []
        key = found = ""
        done = False
        loose = scanner is None
        """A text-only chunk may be among those parsed (`coalesce` then merges a run of them):
        no scanner, one that did not learn some text, or an event made more than one chunk."""
        misses = -1 if scanner is None else scanner.misses
        silent = None if scanner is None else scanner.silent
        at, count = 0, len(events)
        while at < count:
            data = events[at]
            body: bytes | None = None
            if scanner is not None:
                at, body, found = scanner.run(events, at)  # `at` as it was when none is found
            if not body:
                body = None
                at += 1
                if data == b"[DONE]":
                    done = True
                    break
                # An event the scanner knows makes no chunk is not parsed (an Anthropic ping).
                parsed = [] if silent and data in silent else self._event(codec, data)
                if not parsed:
                    # No chunk (a ping, a block's start or end): nothing to merge, and the
                    # run of text around it goes on as one, as if it had not come.
                    continue
                single = len(parsed) == 1
                loose = loose or not single
                if single and scanner is not None:
                    body, found = scanner.learn(data, parsed[0]), scanner.key
                if body is None:
                    if texts:
                        chunks.append(_relayed(texts, key))
                        texts = []
                    chunks += parsed
                    continue
            if found != key and texts:
                chunks.append(_relayed(texts, key))
                texts = []
            key = found
            texts.append(body)
        if texts:
            chunks.append(_relayed(texts, key))
        merge = loose or (scanner is not None and scanner.misses != misses)
        return self._read_chunks(chunks, done, merge), done

    def _read_chunks(self, chunks: list[Chunk], done: bool, merge: bool) -> list[Chunk]:
        """A read's chunks as they go on: merged (`merge`), marked when `[DONE]` came in the
        read (`done`), the first of the exchange's noting `first_chunk_at`."""
        if merge:
            chunks = coalesce(chunks)
        if done:
            _ending(chunks)
        if chunks and self.first_chunk_at is None:
            self.first_chunk_at = time.perf_counter()
        return chunks

    async def _replay(self, response: http1.Response) -> AsyncIterator[Chunk]:
        for chunk in await self.whole(response):
            yield chunk

    async def whole(self, response: http1.Response) -> list[Chunk]:
        """The unstreamed answer as chunks (one, for most formats).

        Raises:
            UpstreamError: the body is cut, too large, or not a usable completion.
            UpstreamTimeoutError: the body stalled.
        """
        data = await read_body(self.name, response, [], self._credential)
        return filled(chunks_of(data, self._codec(), self._credential))  # fields for every reader

    def _event(self, codec: Codec, data: bytes) -> list[Chunk]:
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise UpstreamError("upstream sent an event that is not JSON") from exc
        if not isinstance(payload, dict):
            raise UpstreamError("upstream sent an event that is not an object")
        try:
            return codec.event(payload)
        except Fault as fault:
            raise self._fault(fault, "upstream error mid-stream") from fault

    def _fault(self, fault: Fault, prefix: str) -> UpstreamError:
        return fault_error(fault, prefix, self._credential)

    def _broke_off(self, exc: BaseException) -> UpstreamError:
        return broke_off(self.name, exc, self._credential)


async def read_body(
    name: str, response: http1.Response, parts: list[bytes], credential: str
) -> bytes:
    """An unstreamed answer's body: `parts` (read already) and the rest, read to its end.

    Raises:
        UpstreamError: the body is cut or too large.
        UpstreamTimeoutError: the body stalled.
    """
    size = sum(map(len, parts))
    try:
        while part := await response.read_any():
            size += len(part)
            if size > MAX_BODY:
                raise UpstreamError("upstream answer is too large")
            parts.append(part)
    except TimeoutError as exc:
        raise UpstreamTimeoutError(f"upstream {name!r} stalled") from exc
    except http1.HTTPError as exc:
        raise broke_off(name, exc, credential) from exc
    return parts[0] if len(parts) == 1 else b"".join(parts)


def chunks_of(data: bytes, codec: Codec, credential: str) -> list[Chunk]:
    """An unstreamed answer's chunks, read by `codec`; a `Relayable` one carries `data`.

    Raises:
        UpstreamError: not JSON, or not a usable completion.
    """
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise UpstreamError("upstream answer is not JSON") from exc
    try:
        chunks = codec.whole(payload)
    except Fault as fault:
        raise fault_error(fault, "upstream error", credential) from fault
    for chunk in chunks:
        if chunk.__class__ is Relayable and chunk.raw is None:  # type: ignore[attr-defined]
            chunk.raw = data  # type: ignore[attr-defined]
    return chunks


def _relayed(texts: list[bytes], key: str) -> Relayed:
    """One chunk for a run of text-only events of one kind (their string bodies, in order).

    Raises:
        UpstreamError: the text is not a JSON string (a control character, bad UTF-8).
    """
    try:
        return Relayed(b"".join(texts), key)
    except orjson.JSONDecodeError as exc:
        raise UpstreamError("upstream sent an event that is not JSON") from exc


def _ending(chunks: list[Chunk]) -> None:
    """Mark the relayed text of a read that ended the stream: what follows comes at once."""
    for chunk in chunks:
        if chunk.__class__ is Relayed:
            chunk.ending = True  # type: ignore[attr-defined]
