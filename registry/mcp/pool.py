"""The MCP HTTP client's connections: all kept, and checked cheaply while idle (a fix of
httpx2/httpcore2 2.x costs, kept here).

Each time a request joins or leaves its pool, httpcore asks every idle connection whether
its socket became readable (the server closed it while idle). Each ask looks the socket up
through anyio's typed attributes, which build a mapping of every attribute the stream has,
each time: with 32 MCP calls in flight over Streamable HTTP, those lookups were a fifth of
the proxy's CPU. The streams made here look their socket up once, when they connect, and
answer the same questions the same way from it (the readability probe itself is
httpcore's own).

`pooled_client()` is an httpx client whose pool keeps what it opens and connects through
this backend.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any

import anyio
import httpx2
from httpcore2 import AsyncNetworkStream
from httpcore2._backends.anyio import AnyIOBackend, AnyIOStream
from httpcore2._backends.base import SOCKET_OPTION
from httpcore2._utils import is_socket_readable

__all__ = ["KEEPALIVE_S", "MAX_CONNECTIONS", "pooled_client"]

MAX_CONNECTIONS = 100
"""Connections to one MCP server at most (httpx's default)."""
KEEPALIVE_S = 4.0
"""Idle connections are dropped after this: before uvicorn's 5 s (most MCP servers' keep-alive),
so the server seldom closes one under a call being sent (httpx's default is the same 5 s)."""


class _SocketStream(AnyIOStream):
    """httpcore's anyio stream, its raw socket looked up once."""

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        super().__init__(stream)
        self._socket = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return is_socket_readable(self._socket)
        if info == "socket":
            return self._socket
        return super().get_extra_info(info)

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
    ) -> AsyncNetworkStream:
        tls = await super().start_tls(ssl_context, server_hostname, timeout)
        assert isinstance(tls, AnyIOStream)
        return _SocketStream(tls._stream)


class _Backend(AnyIOBackend):
    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
        local_address: str | None = None,
        socket_options: Iterable[SOCKET_OPTION] | None = None,
    ) -> AsyncNetworkStream:
        stream = await super().connect_tcp(host, port, timeout, local_address, socket_options)
        assert isinstance(stream, AnyIOStream)
        return _SocketStream(stream._stream)


def pooled_client(**options: Any) -> httpx2.AsyncClient:
    """An httpx client (`options` as `httpx2.AsyncClient` takes them) that keeps every
    connection it may open (httpx keeps 20 of its 100: past 20 calls at once, each burst
    closed the surplus and the next opened new ones, a TCP connection per call again), and
    whose own transport's pool connects through `_Backend`.

    The client builds its transport itself, so proxies from the environment still apply
    (their transports connect the ordinary way).
    """
    limits = httpx2.Limits(
        max_connections=MAX_CONNECTIONS,
        max_keepalive_connections=None,
        keepalive_expiry=KEEPALIVE_S,
    )
    client = httpx2.AsyncClient(limits=limits, **options)
    transport = client._transport
    if isinstance(transport, httpx2.AsyncHTTPTransport):
        # The pool hands its backend to each connection it makes; none is made yet.
        transport._pool._network_backend = _Backend()
    return client
