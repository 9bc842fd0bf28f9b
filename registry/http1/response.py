"""An answer: its status and headers, its body read as the reads deliver it (decompressed,
with backpressure), the idle and total deadlines of each wait, and its end: the connection
reused when the body was read whole, drained briefly when its content was read, else closed.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import TYPE_CHECKING

from .errors import Disconnected, HTTPError, ProtocolError

if TYPE_CHECKING:
    from .connection import Connection
    from .pool import Pool

_HIGH_WATER = 256 * 1024
"""Unread body bytes past which a connection stops reading from its socket."""
_DRAIN_S = 1.0
_DRAIN_BYTES = 16 * 1024
"""What `Response.release` waits for the end of a body whose content was read: a stream's
last frame (`0\r\n\r\n`) often comes a moment after its `[DONE]`."""


class Response:
    """An answer: its status and headers once `Pool.request` returns, its body read with
    `read_any` or `read`; `close` ends it (its connection reused when it was read whole)."""

    __slots__ = (
        "_buffered",
        "_chunks",
        "_connection",
        "_deadline",
        "_decoder",
        "_drain",
        "_ended",
        "_error",
        "_headers",
        "_idle_s",
        "_pool",
        "_waiter",
        "keep_alive",
        "raw_headers",
        "reason_bytes",
        "received",
        "status",
    )

    def __init__(
        self, connection: Connection, pool: Pool, idle_s: float | None, deadline: float | None
    ) -> None:
        self.status = 0
        self.reason_bytes = b""
        self.raw_headers: list[tuple[bytes, bytes]] = []
        """The answer's headers as they came."""
        self._headers: dict[str, str] | None = None
        self.keep_alive = False
        self._connection: Connection | None = connection
        self._pool = pool
        self._idle_s = idle_s
        self._deadline = deadline
        self._chunks: list[bytes] = []
        self._buffered = 0
        self.received = False
        """Some byte of the answer arrived."""
        self._ended = False
        """The body is complete (or the head never came: `_error` says why)."""
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._decoder: zlib._Decompress | None = None
        self._drain: asyncio.TimerHandle | None = None
        """Set while `release` waits for the body's end."""

    @property
    def reason(self) -> str:
        return self.reason_bytes.decode("latin-1")

    async def read_any(self) -> bytes:
        """The body bytes that arrived since the last read (waiting for some); b"" at its end.

        Raises:
            Disconnected, ProtocolError: the body broke off.
            TimeoutError: no bytes within the idle deadline, or the total one passed.
        """
        while not self._chunks:
            if self._error is not None:
                raise self._error
            if self._ended:
                return b""
            await self._wait()
        return self._taken()

    def body_now(self) -> bytes | None:
        """The whole body without a wait, when its end has arrived (most often with the head):
        what `read` would give, taken. None when it has not all arrived, or broke off: then
        nothing is taken, and `read_any` reads it (and raises what broke it)."""
        if not self._ended or self._error is not None:
            return None
        chunks = self._chunks
        if not chunks:
            return b""
        # `_taken` spelled out, but for its resumption: `close` resumes a paused connection.
        self._chunks = []
        self._buffered = 0
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _taken(self) -> bytes:
        """The body bytes that arrived, handed over (a paused connection reads on)."""
        chunks, self._chunks = self._chunks, []
        self._buffered = 0
        connection = self._connection
        if connection is not None and connection.paused:
            connection.resume()
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def read(self, limit: int = -1) -> bytes:
        """The body to its end, or its first `limit` bytes (and a little more) when it is longer.

        Raises:
            as `read_any`.
        """
        parts: list[bytes] = []
        size = 0
        while limit < 0 or size < limit:
            data = await self.read_any()
            if not data:
                break
            parts.append(data)
            size += len(data)
        return b"".join(parts)

    def close(self) -> None:
        """Done with this answer: its connection is reused when the body was read whole and
        the server keeps it open, closed otherwise."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._ended and self._error is None and not self._chunks:
            connection.done(self)
        else:
            connection.close()

    def release(self) -> None:
        """Done with an answer whose content was read (a stream that sent its `[DONE]`): the
        rest of the body (its last frame, which often comes a moment later) is read and
        dropped, and the connection reused, unless more than `_DRAIN_BYTES` or no end within
        `_DRAIN_S` come: then it is closed."""
        connection = self._connection
        if connection is None or self._ended or self._error is not None or not self.status:
            self.close()
            return
        self._chunks = []
        self._buffered = 0
        connection.resume()
        self._drain = self._pool.loop.call_later(_DRAIN_S, self._give_up)

    async def finish(self, wait_s: float) -> None:
        """Done with an answer whose content was read, as `release`, but waiting here, at
        most `wait_s`, for the rest of its body (read and dropped, at most `_DRAIN_BYTES`):
        when this returns, its connection is back in the pool if the body ended by then
        (so the caller's next request can take it), else closed.

        Raises:
            asyncio.CancelledError: as any wait (the answer is then left to the caller).
        """
        connection = self._connection
        if connection is None or self._ended or self._error is not None or not self.status:
            self.close()
            return
        limit = self._pool.loop.time() + wait_s
        if self._deadline is None or limit < self._deadline:
            self._deadline = limit
        received = 0
        try:
            while received <= _DRAIN_BYTES:
                data = await self.read_any()
                if not data:
                    break
                received += len(data)
        except (HTTPError, TimeoutError):
            pass
        self.close()

    def _give_up(self) -> None:
        self._drain = None
        self.close()

    # Fed by the connection

    @property
    def headers(self) -> dict[str, str]:
        """The headers by their names in lower case; a repeated one's values joined by ", "."""
        headers = self._headers
        if headers is None:
            headers = self._headers = {}
            for name, value in self.raw_headers:
                key = name.decode("latin-1").lower()
                text = value.decode("latin-1")
                known = headers.get(key)
                headers[key] = text if known is None else f"{known}, {text}"
        return headers

    def headed(self, status: int) -> None:
        if 100 <= status < 200:  # an interim answer (103 Early Hints): the real one follows
            self.raw_headers = []
            self.reason_bytes = b""
            return
        self.status = status
        for name, value in self.raw_headers:
            if len(name) == 16 and name.lower() == b"content-encoding":
                self._decode(value.decode("latin-1").strip().lower())
        # `_wake`, spelled out: every answer's head wakes the request waiting for it.
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _decode(self, encoding: str) -> None:
        if encoding in ("gzip", "x-gzip"):
            self._decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._decoder = zlib.decompressobj()

    def feed(self, parts: list[bytes]) -> None:
        """Take the body parts of one read."""
        if not self.status:
            return  # an interim answer's body (none is sent)
        decoder = self._decoder
        if decoder is not None:
            try:
                parts = [data for data in map(decoder.decompress, parts) if data]
            except zlib.error as exc:
                self.fail(ProtocolError(f"the answer's compressed body is broken: {exc}"))
                return
            if not parts:
                return
        self._buffered += sum(map(len, parts))
        if self._drain is not None:
            if self._buffered > _DRAIN_BYTES:
                self._drain.cancel()
                self._give_up()
            return
        self._chunks += parts
        if self._buffered > _HIGH_WATER and self._connection is not None:
            self._connection.pause()
        if self._waiter is not None:
            self._wake()

    def complete(self, keep_alive: bool) -> None:
        if not self.status:
            return  # the interim answer ended; the real one follows
        if self._decoder is not None:
            rest = self._decoder.flush()
            if rest:
                self._chunks.append(rest)
        self.keep_alive = keep_alive
        self._ended = True
        if self._drain is not None:
            self._drain.cancel()
            self._drain = None
            self._chunks = []
            self.close()  # read to its end: the connection goes back to the pool
            return
        if self._waiter is not None:
            self._wake()

    def lost(self, exc: Exception | None) -> None:
        """The connection closed under the answer: the end of a body that runs to the close,
        else an error."""
        self._connection = None
        if self._drain is not None:
            self._drain.cancel()
            self._drain = None
            return
        if self._ended:
            return
        if self.status and exc is None and self._close_delimited():
            self.complete(False)
            return
        if not self.received:
            message = "the server closed the connection before answering"
            if exc is not None:
                message = f"the connection broke before an answer: {exc}"
            self.fail(Disconnected(message, answered=False))
        else:
            text = "the server closed the connection mid-answer"
            self.fail(Disconnected(f"{text}: {exc}" if exc else text, answered=True))

    def fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
        self._ended = True
        self._wake()

    def _close_delimited(self) -> bool:
        headers = self.headers
        return "content-length" not in headers and "chunked" not in headers.get(
            "transfer-encoding", ""
        )

    async def _wait(self) -> None:
        waiter, handle = self._waiting(None)
        if handle is None:
            await waiter
            return
        try:
            await waiter
        finally:
            handle.cancel()

    def _waiting(self, by: float | None) -> tuple[asyncio.Future[None], asyncio.TimerHandle | None]:
        """What the next wait for the answer awaits (woken by `_wake`), and the timer that
        fails it with a `TimeoutError` (None without a limit): within the idle limit, the total
        deadline and `by` (a loop time), whichever comes first.

        Raises:
            TimeoutError: the total deadline or `by` has passed.
        """
        pool = self._pool
        loop = pool._loop or pool.loop
        limit = self._idle_s
        deadline = self._deadline
        if by is not None and (deadline is None or by < deadline):
            deadline = by
        if deadline is not None:
            left = deadline - loop.time()
            if left <= 0:
                raise TimeoutError
            if limit is None or left < limit:
                limit = left
        waiter = self._waiter = loop.create_future()
        if limit is None:
            return waiter, None
        return waiter, loop.call_later(limit, _expire, waiter)

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())
