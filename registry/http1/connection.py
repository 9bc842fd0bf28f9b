"""One connection (an asyncio protocol): a request at a time, its answer parsed by httptools
as bytes arrive and handed to its `Response`; back to its pool when the answer was read whole
and the server keeps it open.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import httptools

from .errors import ProtocolError

if TYPE_CHECKING:
    from .pool import Pool
    from .response import Response


class Connection(asyncio.Protocol):
    """One connection: a request at a time, its answer parsed as bytes arrive."""

    def __init__(self, pool: Pool, key: tuple[str, str, int]) -> None:
        self.key = key
        self.idle_since = 0.0
        self._pool = pool
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._response: Response | None = None
        self._lost = False
        self.paused = False
        self._body: list[bytes] = []
        """The body parts of the read being parsed, handed over together once it is."""
        self._complete: bool | None = None
        """The read being parsed ended the answer (whether the server keeps the connection)."""

    def send(self, response: Response, head: bytes, body: bytes) -> None:
        assert self._transport is not None
        self._response = response
        if body:
            self._transport.writelines((head, body))
        else:
            self._transport.write(head)

    def close(self) -> None:
        """Close the connection (its answer, if any, is abandoned)."""
        self._response = None
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()

    def done(self, response: Response) -> None:
        """`response`, read whole, is over: the connection goes back to the pool when the
        server keeps it open."""
        if self._response is not response:
            return
        self._response = None
        if response.keep_alive and not self._lost:
            if self.paused:
                self.resume()
            self._pool._release(self)
        else:
            self.close()

    def pause(self) -> None:
        if not self.paused and self._transport is not None:
            self.paused = True
            self._transport.pause_reading()

    def resume(self) -> None:
        if self.paused and self._transport is not None:
            self.paused = False
            self._transport.resume_reading()

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        response = self._response
        if response is None:
            self.close()  # bytes nobody asked for: the connection is not fit to reuse
            return
        response.received = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._response = None
            self._body = []
            self._complete = None
            response.fail(ProtocolError(f"not an HTTP/1.1 answer: {exc}"))
            self.close()
            return
        # A read often holds many body parts (a stream's events, each a chunk of its own):
        # the response takes them together, and the end after them.
        body = self._body
        if body:
            self._body = []
            response.feed(body)
        complete = self._complete
        if complete is not None:
            self._complete = None
            response.complete(complete)

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._pool._forget(self)
        self._pool._dropped()
        response, self._response = self._response, None
        if response is not None:
            response.lost(exc)

    # httptools callbacks

    def on_status(self, status: bytes) -> None:
        assert self._response is not None
        self._response.reason_bytes += status

    def on_header(self, name: bytes, value: bytes) -> None:
        assert self._response is not None
        self._response.raw_headers.append((name, value))

    def on_headers_complete(self) -> None:
        assert self._response is not None
        self._response.headed(self._parser.get_status_code())

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        self._complete = self._parser.should_keep_alive()
