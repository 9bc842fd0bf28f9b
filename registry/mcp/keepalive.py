"""Keep Streamable HTTP connections open across calls: read each answer's stream to its end.

The mcp SDK's Streamable HTTP transport reads a POST's `text/event-stream` answer until the
event that carries the JSON-RPC response, then closes the response without reading the rest
of the body: the chunked encoding's last chunk, which the server sends right after that
event. httpcore returns a connection to its pool only when the response was read to its end,
so it closed the connection instead, and every `tools/call` paid for a new TCP connection:
connect, the first writes on a fresh socket, teardown, on both sides. That was more than half
of the CPU an MCP tool call over HTTP cost the proxy.

`read_to_end` is an httpx `response` event hook. It gives a POST's event stream a close that
first reads what is left of the body (at most `DRAIN_BYTES`, for at most `DRAIN_S`), so the
connection goes back to the pool. A stream that does not end by then, an error while reading
it, or a cancelled close, ends it the way the SDK did: the connection is closed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx2

__all__ = ["DRAIN_BYTES", "DRAIN_S", "read_to_end"]

DRAIN_S = 0.25
"""How long a close waits for the rest of an answer's stream before closing the connection."""
DRAIN_BYTES = 64 * 1024
"""How much of the rest it reads at most (events after the response are not wanted)."""


async def read_to_end(response: httpx2.Response) -> None:
    """Let a POST's event stream be read to its end when it is closed early."""
    content_type = response.headers.get("content-type", "")
    stream = response.stream
    if (
        response.request.method == "POST"
        and content_type.startswith("text/event-stream")
        and isinstance(stream, httpx2.AsyncByteStream)
    ):
        response.stream = _ReadToEnd(stream)


class _ReadToEnd(httpx2.AsyncByteStream):
    """A response stream whose `aclose` reads what its reader left, then closes."""

    def __init__(self, stream: httpx2.AsyncByteStream) -> None:
        self._stream = stream
        self._chunks: AsyncIterator[bytes] | None = None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self._chunks = self._stream.__aiter__()
        async for chunk in self._chunks:
            yield chunk

    async def aclose(self) -> None:
        try:
            if self._chunks is not None:
                await self._drain(self._chunks)
        finally:
            await self._stream.aclose()

    @staticmethod
    async def _drain(chunks: AsyncIterator[bytes]) -> None:
        received = 0
        with anyio.move_on_after(DRAIN_S):
            try:
                async for chunk in chunks:
                    received += len(chunk)
                    if received > DRAIN_BYTES:
                        return
            except (httpx2.TransportError, RuntimeError):
                # A broken stream, or one its reader still holds (httpx's StreamError is a
                # RuntimeError): the connection is closed below, as the SDK would have.
                return
