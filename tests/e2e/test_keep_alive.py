"""`server.keep_alive_s`: how long `toolwire serve` keeps a client's idle connection open.

Clients (httpx under the OpenAI and Anthropic SDKs) drop an idle connection after 5 s, which
was also the server's own limit: a request sent on a connection as the server closed it was
lost. The server now waits 75 s by default, so that the client closes first."""

from __future__ import annotations

import asyncio
from pathlib import Path

from testing.upstream import FakeUpstream
from tests.e2e.served import toolwire_serve

WAIT_S = 60.0
CLIENTS_IDLE_S = 6.0
"""Past httpx's keep-alive expiry (5 s), which was the server's own limit too."""


async def _get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int) -> bytes:
    """One GET /healthz on the connection; its status line."""
    writer.write(f"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n".encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT_S)
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    await asyncio.wait_for(reader.readexactly(length), WAIT_S)
    return head.partition(b"\r\n")[0]


async def test_an_idle_connection_outlives_the_clients_keep_alive(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    async with toolwire_serve(tmp_path, upstream) as (base, _):
        port = int(base.rpartition(":")[2])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            assert await _get(reader, writer, port) == b"HTTP/1.1 200 OK"
            await asyncio.sleep(CLIENTS_IDLE_S)
            assert not reader.at_eof()
            assert await _get(reader, writer, port) == b"HTTP/1.1 200 OK"
        finally:
            writer.close()


async def test_an_idle_connection_is_closed_after_keep_alive_s(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    async with toolwire_serve(tmp_path, upstream, server={"keep_alive_s": 0.2}) as (base, _):
        port = int(base.rpartition(":")[2])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            assert await _get(reader, writer, port) == b"HTTP/1.1 200 OK"
            assert await asyncio.wait_for(reader.read(), WAIT_S) == b""  # closed by the server
        finally:
            writer.close()
