"""The transports of an MCP server over HTTP, as the session opens them.

A Streamable HTTP server takes Toolwire's own transport (`streamable_http`, on `http1`) unless
it needs what only an httpx client does (an OAuth flow, a proxy the environment names); then,
like an SSE server, it keeps the SDK's client, on a pooled httpx2 client whose requests carry
a call's trace context as headers (the SDK sends from its own task, where the caller's context
is not current).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx2
import orjson
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client

from registry.mcp.http_requests import proxied
from registry.mcp.keepalive import read_to_end
from registry.mcp.origins import Origins
from registry.mcp.pool import pooled_client
from registry.mcp.streamable_http import streamable_http_transport
from registry.propagation import TRACE_HEADER_NAMES

__all__ = ["MAX_MESSAGE_BYTES", "own_http", "streamable_http_streams", "traced_http_client"]

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The longest message a server may send over Streamable HTTP (the SDK's default, 1 MiB, would
lose a long tool result with the connection; the executor cuts results to its own limit)."""


@contextlib.asynccontextmanager
async def streamable_http_streams(
    url: str,
    headers: dict[str, str],
    timeout_s: float,
    origins: Origins | None = None,
    auth: httpx2.Auth | None = None,
) -> AsyncIterator[TransportStreams]:
    if own_http(url, auth):
        transport = streamable_http_transport(
            url, headers, timeout_s, origins, max_event_bytes=MAX_MESSAGE_BYTES
        )
        async with transport as streams:
            yield streams
        return
    # A long read timeout: the server may hold a response stream open while a tool runs.
    timeout = httpx2.Timeout(timeout_s, read=max(300.0, timeout_s))
    # Each call's event stream tells which call its server's questions belong to.
    responses = [read_to_end] if origins is None else [read_to_end, origins.watch]
    async with (
        pooled_client(
            headers=headers,
            timeout=timeout,
            auth=auth,
            event_hooks={"request": [_trace_headers_from_meta], "response": responses},
        ) as client,
        streamable_http_client(
            url, http_client=client, max_sse_event_size=MAX_MESSAGE_BYTES
        ) as streams,
    ):
        yield streams


def own_http(url: str | None, auth: httpx2.Auth | None) -> bool:
    """Whether a Streamable HTTP source takes Toolwire's transport (`http1`, the message sent
    by its caller): not with OAuth, whose provider is an httpx `Auth` flow, nor through a
    proxy the environment names, which `http1` does not know; those keep the SDK's client."""
    return auth is None and url is not None and not proxied(url)


def traced_http_client(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """The SSE transport's client (the SDK's default timeouts), with a call's trace context
    as headers."""
    return pooled_client(
        headers=headers,
        timeout=timeout if timeout is not None else httpx2.Timeout(30.0, read=300.0),
        auth=auth,
        event_hooks={"request": [_trace_headers_from_meta]},
    )


async def _trace_headers_from_meta(request: httpx2.Request) -> None:
    """A `tools/call` sent with trace context in its `_meta` carries it as HTTP headers too
    (the transport sends from its own task, where the caller's context is not current)."""
    if request.method != "POST":
        return
    try:
        body = request.content
    except httpx2.RequestNotRead:
        return  # a streamed body: not a JSON-RPC message the session sent
    if b'"traceparent"' not in body:
        return
    try:
        meta = orjson.loads(body)["params"]["_meta"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return
    for name in TRACE_HEADER_NAMES:
        value = meta.get(name) if isinstance(meta, dict) else None
        if isinstance(value, str):
            request.headers[name] = value
