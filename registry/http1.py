"""HTTP/1.1 to upstreams and services: pooled keep-alive connections, read by httptools.

Every model call goes through here, so its cost is paid on every request: aiohttp's client
spends about 130 Python calls on one (its request and response objects, the connector's
bookkeeping, the stream reader, the timer contexts). This does the same job for what an
upstream call needs (a POST or a GET with a body in memory, an answer read whole or as it
arrives) in a few: the request head is bytes joined once, the answer is parsed by the C
parser uvicorn uses (httptools), and its body is handed over as the reads deliver it.

What it keeps of a full client: a bounded pool per upstream, idle connections dropped after
`keepalive_s` (before the servers' own keep-alive ends), TLS, gzip and deflate answers,
chunked and close-delimited bodies, an idle (between reads) and a total deadline, and
backpressure (a connection stops reading while `_HIGH_WATER` bytes wait unread). It follows
no redirects and knows no proxies or cookies: an upstream is one base URL.

Its errors are its own (`HTTPError` and subclasses); `transport.py` maps them.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import zlib
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple, NoReturn
from urllib.parse import urlsplit

import httptools

_HIGH_WATER = 256 * 1024
"""Unread body bytes past which a connection stops reading from its socket."""
_USER_AGENT = b"\r\nUser-Agent: toolwire"
_DRAIN_S = 1.0
_DRAIN_BYTES = 16 * 1024
"""What `Response.release` waits for the end of a body whose content was read: a stream's
last frame (`0\r\n\r\n`) often comes a moment after its `[DONE]`."""
_TARGETS = 256
"""URLs whose targets a pool keeps worked out."""
_clock: Callable[[], float] = time.monotonic
"""The clock idle connections are aged by (a name of its own, for tests)."""


class HTTPError(Exception):
    """A request that got no usable answer."""


class ConnectError(HTTPError):
    """No connection could be made."""

    def __init__(self, host: str, port: int, error: OSError) -> None:
        super().__init__(f"cannot connect to {host}:{port}: {error}")
        self.host, self.port, self.error = host, port, error


class ConnectTimeout(HTTPError, TimeoutError):
    """No connection was made within the pool's `connect_timeout_s` (a `TimeoutError`, as
    every deadline here)."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(f"no connection to {host}:{port} in time")
        self.host, self.port = host, port


class Disconnected(HTTPError):
    """The connection closed or broke; `answered`: after some of the answer arrived (a
    request that got nothing back may be sent again)."""

    def __init__(self, message: str, *, answered: bool) -> None:
        super().__init__(message)
        self.answered = answered


class ProtocolError(HTTPError):
    """The answer is not HTTP/1.1."""


class Target(NamedTuple):
    """Where a URL's requests go, worked out once per URL."""

    key: tuple[str, str, int]
    host: str
    port: int
    tls: bool
    path: bytes
    authority: bytes


def target(url: str) -> Target:
    """The target of an http or https URL.

    Raises:
        ValueError: not an http(s) URL with a host.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    tls = parts.scheme == "https"
    port = parts.port or (443 if tls else 80)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    host = parts.hostname
    shown = f"[{host}]" if ":" in host else host
    authority = shown if parts.port is None else f"{shown}:{port}"
    return Target((parts.scheme, host, port), host, port, tls, path.encode(), authority.encode())


class Pool:
    """Keep-alive connections to upstream servers, at most `limit` open at once.

    `fresh`: every request on a connection of its own, closed after its answer (a request
    sent again after its pooled connection died under it). `resolve`: the addresses to
    connect to for a host name (checked ones, for a guard), tried in turn; by default the
    system's resolver, as `loop.create_connection` asks it. `connect_timeout_s` None: the
    caller bounds the whole request.
    """

    def __init__(
        self,
        *,
        limit: int,
        connect_timeout_s: float | None,
        keepalive_s: float,
        fresh: bool = False,
        resolve: Callable[[str, int], Awaitable[list[str]]] | None = None,
    ) -> None:
        self._limit = limit if limit > 0 else 1 << 30
        self._connect_timeout_s = connect_timeout_s
        self._keepalive_s = keepalive_s
        self._fresh = fresh
        self._resolve = resolve
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._open = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._targets: dict[str, Target] = {}
        self._tls: ssl.SSLContext | None = None
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the pool's connections belong to (the first request's; kept, as
        Python 3.11's `asyncio.get_running_loop` makes a system call each time)."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        return loop

    async def request(
        self,
        method: bytes,
        url: str,
        headers: dict[str, str],
        body: bytes = b"",
        idle_s: float | None = None,
        total_s: float | None = None,
        first_byte_s: float | None = None,
    ) -> Response:
        """Send a request and wait for its answer's head; the `Response` reads the body.
        `idle_s` bounds each wait for the answer's bytes, `total_s` the whole exchange (the
        body included), `first_byte_s` the wait for the head (a connection included: a free
        one, or a new one). Cancelling this closes the request's connection.

        One coroutine from the request to the head, with an idle connection (the usual
        request) taken without a wait: each layer would cost its frames at every resumption.

        The deadlines are not keyword-only: Python 3.11 specializes no call to a function with
        keyword-only parameters, and every upstream call makes one.

        Raises:
            ValueError: a bad URL, or a header that would break the head (a line break).
            ConnectError, Disconnected, ProtocolError: see there.
            TimeoutError: `total_s` or `first_byte_s` passed before the head came.
        """
        place = self._targets.get(url)
        if place is None:
            place = target(url)
            if len(self._targets) < _TARGETS:  # a service's URLs vary with their arguments
                self._targets[url] = place
        head = _head(method, place, headers, len(body))
        loop = self._loop or self.loop
        head_by = None if first_byte_s is None else loop.time() + first_byte_s
        connection = None if self._fresh else self._idle_connection(place.key)
        if connection is None:
            if head_by is None:
                connection = await self._acquire(place)
            else:
                async with asyncio.timeout_at(head_by):
                    connection = await self._acquire(place)
        deadline = None if total_s is None else loop.time() + total_s
        response = Response(connection, self, idle_s, deadline)
        try:
            connection.send(response, head, body)
            # The wait for the head, here rather than in a coroutine of its own.
            while not response.status and response._error is None:
                waiter, handle = response._waiting(head_by)
                if handle is None:
                    await waiter
                    continue
                try:
                    await waiter
                finally:
                    handle.cancel()
            if not response.status:
                raise response._error  # type: ignore[misc]
        except BaseException:
            response.close()
            raise
        return response

    async def aclose(self) -> None:
        """Close every idle connection; those in use close when their answers are done."""
        self._closed = True
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    def _idle_connection(self, key: tuple[str, str, int]) -> _Connection | None:
        """An idle connection to `key` still fit to carry a request (the others closed)."""
        idle = self._idle.get(key)
        if idle:
            since = _clock() - self._keepalive_s
            while idle:
                connection = idle.pop()
                # Fit: open, and idle since `since` at most (spelled out: every request asks).
                transport = connection._transport
                if (
                    not connection._lost
                    and transport is not None
                    and not transport.is_closing()
                    and connection.idle_since > since
                ):
                    return connection
                connection.close()
        return None

    async def _acquire(self, place: Target) -> _Connection:
        """A connection to `place`: an idle one, else a new one once there is room."""
        while True:
            connection = None if self._fresh else self._idle_connection(place.key)
            if connection is not None:
                return connection
            if self._open < self._limit:
                break
            # Woken when a connection closes or comes back idle.
            waiter = self.loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # the turn it was given passes on
                raise
        self._open += 1
        try:
            return await self._connect(place)
        except BaseException:
            self._dropped()
            raise

    async def _connect(self, place: Target) -> _Connection:
        loop = self.loop
        tls = None
        if place.tls:
            if self._tls is None:
                self._tls = ssl.create_default_context()
            tls = self._tls
        try:
            async with asyncio.timeout(self._connect_timeout_s):
                if self._resolve is None:
                    _, connection = await loop.create_connection(
                        lambda: _Connection(self, place.key),
                        place.host,
                        place.port,
                        ssl=tls,
                        server_hostname=place.host if tls else None,
                    )
                    return connection
                return await self._connect_resolved(place, tls)
        except TimeoutError:
            raise ConnectTimeout(place.host, place.port) from None
        except OSError as exc:
            raise ConnectError(place.host, place.port, exc) from exc

    async def _connect_resolved(self, place: Target, tls: ssl.SSLContext | None) -> _Connection:
        """A connection to the first of `resolve`'s addresses that takes one.

        Raises:
            OSError: none did (the last one's error), or the name did not resolve.
        """
        assert self._resolve is not None
        addresses = await self._resolve(place.host, place.port)
        failure: OSError = OSError(f"no address for {place.host}")
        for address in addresses:
            try:
                _, connection = await self.loop.create_connection(
                    lambda: _Connection(self, place.key),
                    address,
                    place.port,
                    ssl=tls,
                    server_hostname=place.host if tls else None,
                )
            except OSError as exc:
                failure = exc
                continue
            return connection
        raise failure

    def _release(self, connection: _Connection) -> None:
        """A connection whose answer was read whole and may carry another request."""
        if self._fresh or self._closed:
            connection.close()
            return
        connection.idle_since = _clock()
        self._idle.setdefault(connection.key, []).append(connection)
        if self._waiters:
            self._wake()

    def _dropped(self) -> None:
        """A connection closed (or never made): room for another."""
        self._open -= 1
        self._wake()

    def _forget(self, connection: _Connection) -> None:
        idle = self._idle.get(connection.key)
        if idle and connection in idle:
            idle.remove(connection)

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return


class Headers(dict[str, str]):
    """Request headers that many requests send as they are (an upstream's, with its key):
    checked and written as the head's lines once, when made, instead of on every request
    (`Pool.request` takes them as any headers). Never changed once made: it refuses to be
    (a copy, `dict(headers)`, is a plain dict).

    Raises:
        ValueError: a header name or value holds a line break.
    """

    __slots__ = ("_lines", "_names")

    def __init__(self, headers: Mapping[str, str]) -> None:
        super().__init__(headers)
        self._lines, self._names = _lines(self)

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("these headers are shared: change a copy, dict(headers)")

    __setitem__ = __delitem__ = __ior__ = _refuse  # type: ignore[assignment]
    update = pop = popitem = setdefault = clear = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self),)


def _lines(headers: Mapping[str, str]) -> tuple[bytes, set[str] | None]:
    """The head's lines of `headers` (with an `Accept` when they have none), and their names
    in lower case when one of them is a header the client writes itself (else None).

    Raises:
        ValueError: a header name or value holds a line break.
    """
    lines = "".join([f"{name}: {value}\r\n" for name, value in headers.items()])
    if lines.count("\n") != len(headers) or lines.count("\r") != len(headers):
        raise ValueError("a header name or value holds a line break")
    if "Accept" not in headers and "accept" not in headers:
        lines += "Accept: */*\r\n"
    if not _ORDINARY.issuperset(headers):
        names = {name.lower() for name in headers}
        if not names.isdisjoint(_WRITTEN):
            return lines.encode(), names
    return lines.encode(), None


def _head(method: bytes, place: Target, headers: dict[str, str], length: int) -> bytes:
    if headers.__class__ is Headers:
        lines, names = headers._lines, headers._names  # type: ignore[attr-defined]
    else:
        lines, names = _lines(headers)
    if names is not None:
        return _head_with_own(method, place, names, length, lines)
    return b"".join(
        (
            method,
            b" ",
            place.path,
            b" HTTP/1.1\r\nHost: ",
            place.authority,
            _USER_AGENT,
            b"\r\nAccept-Encoding: gzip, deflate\r\nContent-Length: ",
            str(length).encode(),
            b"\r\n",
            lines,
            b"\r\n",
        )
    )


_ORDINARY = frozenset(
    {"Content-Type", "content-type", "Authorization", "authorization", "Accept", "accept"}
)
"""Header names, as callers spell them, that are none of `_WRITTEN`: the usual request's
head is made without looking at each name."""
_WRITTEN = frozenset(
    {"host", "user-agent", "accept-encoding", "content-length", "transfer-encoding"}
)
"""Header names (lower case) the client writes itself."""


def _head_with_own(
    method: bytes, place: Target, names: set[str], length: int, lines: bytes
) -> bytes:
    """`_head` for headers (their `names` in lower case) that set one the client writes itself:
    the caller's `Host`, `User-Agent` or `Accept-Encoding` replaces the client's own, in
    whatever spelling; a `Content-Length` or `Transfer-Encoding` is refused (the client
    writes the body's length)."""
    if "content-length" in names or "transfer-encoding" in names:
        raise ValueError("Content-Length and Transfer-Encoding are the client's to write")
    own = [method, b" ", place.path, b" HTTP/1.1\r\n"]
    if "host" not in names:
        own += (b"Host: ", place.authority, b"\r\n")
    if "user-agent" not in names:
        own.append(b"User-Agent: toolwire\r\n")
    if "accept-encoding" not in names:
        own.append(b"Accept-Encoding: gzip, deflate\r\n")
    own += (b"Content-Length: ", str(length).encode(), b"\r\n", lines, b"\r\n")
    return b"".join(own)


class _Connection(asyncio.Protocol):
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
        self, connection: _Connection, pool: Pool, idle_s: float | None, deadline: float | None
    ) -> None:
        self.status = 0
        self.reason_bytes = b""
        self.raw_headers: list[tuple[bytes, bytes]] = []
        """The answer's headers as they came."""
        self._headers: dict[str, str] | None = None
        self.keep_alive = False
        self._connection: _Connection | None = connection
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
