"""Limits on a request's head (its request line and headers), kept by the HTTP protocol
before the app, and so before authentication, sees anything.

uvicorn's httptools protocol has none: one endless header is buffered until the client stops,
any number of fields is accepted, and a client that sends half a head holds its connection
for good. `LimitedHttpTools` is that protocol with three limits (`server.max_header_bytes`,
`server.max_headers`, `server.header_timeout_s`): past the size or count the client gets a
431, past the time a 408 (or, before its first byte, nothing), and the connection is closed.

`protocol(server)` is the `http` argument of `uvicorn.Config` and `uvicorn.run`, picklable for
`--workers` (each worker process rebuilds it).
"""

from __future__ import annotations

import asyncio
import functools
import http
from dataclasses import dataclass
from typing import Any, cast

import httptools
import orjson
from uvicorn.config import Config
from uvicorn.server import ServerState

from ..config import ServerConfig
from ..errors import ProxyError, RequestTimeoutError
from .http_wire import LeanHttpTools
from .routes import route_of


@dataclass(frozen=True, slots=True)
class HeadLimits:
    """How large a request's head may be, in bytes and fields, and how long it may take."""

    max_bytes: int
    max_fields: int
    timeout_s: float

    @classmethod
    def of(cls, server: ServerConfig) -> HeadLimits:
        return cls(server.max_header_bytes, server.max_headers, server.header_timeout_s)


def protocol(server: ServerConfig) -> type[asyncio.Protocol]:
    """The protocol factory uvicorn takes as `http`, with `server`'s head limits."""
    # uvicorn only calls what it is given, as it would the class.
    factory = functools.partial(LimitedHttpTools, limits=HeadLimits.of(server))
    return cast("type[asyncio.Protocol]", factory)


class HeadTooLargeError(ProxyError):
    """A request's head is over the size or field count allowed."""

    status = 431
    type = "invalid_request_error"
    code = "request_header_fields_too_large"


class LimitedHttpTools(LeanHttpTools):
    """uvicorn's httptools protocol (made lean: `http_wire.py`), refusing heads past `limits`.

    A head's size is judged twice, neither judgement refusing a head within the limit: when
    it completes (its URL and fields, exactly, when the reads it came in could hold more than
    the limit; a whole request in one small read costs no count), and by whole reads while it
    stays incomplete (one endless field never completes, and httptools would buffer all of
    it). Its timer runs from the connection's start, or a later request's first byte, to its
    last header; one timer per connection is re-armed only when it fires early.
    """

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        limits: HeadLimits,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._limits = limits
        self._max_bytes = limits.max_bytes
        self._max_fields = limits.max_fields
        self._read = 0
        """The size of the read being parsed."""
        self._head_open = False
        self._head_begun = False
        self._head_most = 0
        """Bytes of the reads the head came in: at least the head's size."""
        self._head_least = 0
        """Bytes of the reads that were head only: at most the head's size."""
        self._head_started = 0.0
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_open = True
        self._head_started = self.loop.time()
        self._head_timer = self.loop.call_later(self._limits.timeout_s, self._head_due)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        size = self._read = len(data)
        continued = self._head_begun
        if continued:
            self._head_most += size
        # `LeanHttpTools.data_received` inline: a frame less on every read.
        self._idle = False
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.parse_failed(exc)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        if continued and self._head_begun and not self.transport.is_closing():
            # The head began before this read and did not end in it: all of it is head.
            self._head_least += size
            if self._head_least > self._max_bytes:
                self._refuse(HeadTooLargeError(self._too_large()))

    def parse_failed(self, exc: httptools.HttpParserError) -> None:
        # A head refusal raised in a parser callback comes wrapped in httptools' error.
        refused = exc.__context__
        if isinstance(exc, httptools.HttpParserCallbackError) and isinstance(
            refused, _HeadRefusedError
        ):
            self._refuse(HeadTooLargeError(str(refused)))
        else:
            LeanHttpTools.parse_failed(self, exc)

    def on_message_begin(self) -> None:
        if not self._head_open:  # a kept-alive connection's next request
            self._head_open = True
            self._head_least = 0
            self._head_started = self.loop.time()
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(self._limits.timeout_s, self._head_due)
        self._head_begun = True
        self._head_most = self._read
        # uvicorn's `on_message_begin` inline (its test: test_http_wire.py's REPLACED).
        self.url = b""
        self.expect_100_continue = False
        self.headers = []
        self.scope = {  # type: ignore[typeddict-item]
            "type": "http",
            "asgi": {"version": self.asgi_version, "spec_version": "2.3"},
            "http_version": "1.1",
            "server": self.server,
            "client": self.client,
            "scheme": self.scheme,  # type: ignore[typeddict-item]
            "root_path": self.root_path,
            "headers": self.headers,
            "state": self.app_state.copy(),
        }

    def head_over(self) -> None:
        # Called by `LeanHttpTools.on_headers_complete` (which closes the head) when the
        # reads the head came in, or its fields, are past the limits.
        if len(self.headers) > self._max_fields:
            raise _HeadRefusedError(f"the request has more than {self._max_fields} header fields")
        size = len(self.url) + sum([len(name) + len(value) for name, value in self.headers])
        if size > self._max_bytes:
            raise _HeadRefusedError(self._too_large())

    def _head_due(self) -> None:
        self._head_timer = None
        if not self._head_open or self.transport.is_closing():
            return  # the head came; the next request's first byte arms the timer again
        left = self._head_started + self._limits.timeout_s - self.loop.time()
        if left > 0 or self._answering():
            # The timer was armed for an earlier head, or a pipelined head waits behind an
            # answer still being sent: not this head's fault yet.
            delay = left if left > 0 else self._limits.timeout_s
            self._head_timer = self.loop.call_later(delay, self._head_due)
            return
        if not self._head_begun:
            self.transport.close()  # not a byte sent: nothing to answer
            return
        timeout = self._limits.timeout_s
        self._refuse(RequestTimeoutError(f"the request's headers took longer than {timeout:g} s"))

    def _too_large(self) -> str:
        return f"the request's line and headers exceed {self._max_bytes} bytes"

    def _answering(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _refuse(self, error: ProxyError) -> None:
        """Answer `error` in the shape of the route the URL names, and close the connection
        (only close it while an earlier answer is still being sent: pipelined requests)."""
        if not self._answering():
            url: bytes = getattr(self, "url", b"")
            path = url.partition(b"?")[0].decode("latin-1")
            body = orjson.dumps(route_of(path).shape(error))
            phrase = http.HTTPStatus(error.status).phrase
            head = [f"HTTP/1.1 {error.status} {phrase}".encode()]
            head += [name + b": " + value for name, value in self.server_state.default_headers]
            head += [
                b"content-type: application/json",
                b"content-length: " + str(len(body)).encode(),
                b"connection: close",
            ]
            self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
        self.transport.close()


class _HeadRefusedError(Exception):
    """Raised in a parser callback to stop parsing a head past its limits."""
