"""The pool: keep-alive connections per upstream, at most `limit` open at once, idle ones
dropped after `keepalive_s`; a request sent on one and its answer's head awaited.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable

from .connection import Connection
from .errors import ConnectError, ConnectTimeout
from .head import Target, request_head, target
from .response import Response

_TARGETS = 256
"""URLs whose targets a pool keeps worked out."""
_clock: Callable[[], float] = time.monotonic
"""The clock idle connections are aged by (a name of its own, for tests)."""


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
        self._idle: dict[tuple[str, str, int], list[Connection]] = {}
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
        head = request_head(method, place, headers, len(body))
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

    def _idle_connection(self, key: tuple[str, str, int]) -> Connection | None:
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

    async def _acquire(self, place: Target) -> Connection:
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

    async def _connect(self, place: Target) -> Connection:
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
                        lambda: Connection(self, place.key),
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

    async def _connect_resolved(self, place: Target, tls: ssl.SSLContext | None) -> Connection:
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
                    lambda: Connection(self, place.key),
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

    def _release(self, connection: Connection) -> None:
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

    def _forget(self, connection: Connection) -> None:
        idle = self._idle.get(connection.key)
        if idle and connection in idle:
            idle.remove(connection)

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
