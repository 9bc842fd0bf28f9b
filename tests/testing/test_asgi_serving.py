"""The tests' server (`testing/asgi_serving.py`): it stops when told, and a stop that cannot
finish (a response that never ends, a lifespan's shutdown that hangs) fails the test at its
deadline instead of waiting for pytest's hang detector."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from testing.asgi_serving import serve_app


class _Endless:
    """An app whose response streams until it is cancelled, and whose lifespan's shutdown
    hangs when `stuck_shutdown`; `started` is set once a response has begun."""

    def __init__(self, *, stuck_shutdown: bool = False) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.stuck_shutdown = stuck_shutdown

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await receive()
            await send({"type": "lifespan.startup.complete"})
            await receive()
            if self.stuck_shutdown:
                await asyncio.Event().wait()
            await send({"type": "lifespan.shutdown.complete"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"begun", "more_body": True})
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


async def _open_request(root: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = root.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(b"GET / HTTP/1.1\r\nhost: test\r\n\r\n")
    await writer.drain()
    return reader, writer


async def test_a_response_that_never_ends_fails_the_stop_at_its_deadline() -> None:
    app = _Endless()
    with pytest.raises(TimeoutError, match=r"did not stop within 0.2 s \(1 connections"):
        async with serve_app(app, stop_s=0.2) as root:
            reader, writer = await _open_request(root)
            await asyncio.wait_for(app.started.wait(), 60)  # a deadline that must not fire
    assert app.cancelled.is_set()
    assert await asyncio.wait_for(reader.read(), 60)  # the connection was closed
    writer.close()


async def test_a_lifespan_shutdown_that_hangs_fails_the_stop_at_its_deadline() -> None:
    with pytest.raises(TimeoutError, match=r"did not stop within 0.2 s \(0 connections"):
        async with serve_app(_Endless(stuck_shutdown=True), stop_s=0.2):
            pass


async def test_a_server_that_can_stop_stops_without_its_deadline() -> None:
    app = _Endless()
    async with serve_app(app, stop_s=60, timeout_graceful_shutdown=1) as root:
        _, writer = await _open_request(root)
        await asyncio.wait_for(app.started.wait(), 60)
    # the graceful shutdown's own limit ended the response, as uvicorn's does
    assert app.cancelled.is_set()
    writer.close()
