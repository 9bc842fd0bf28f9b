"""Serving an ASGI app under uvicorn for a test: the one way the suite starts its servers."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any, Literal

import uvicorn

from proxy.config import ServerConfig
from proxy.server import http_limits


@contextlib.asynccontextmanager
async def serve_app(
    app: Any,
    *,
    lifespan: Literal["on", "off", "auto"] = "on",
    timeout_graceful_shutdown: int | None = None,
    server: ServerConfig | None = None,
) -> AsyncIterator[str]:
    """Serve `app` on an ephemeral loopback port (bound before uvicorn starts, so no other
    process can take it); yields its root URL, `http://127.0.0.1:PORT`, once it serves.

    It is served as `toolwire serve` serves: httptools with the head limits of `server`
    (the defaults when not given)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(
        app,
        http=http_limits.protocol(server or ServerConfig()),
        log_level="warning",
        lifespan=lifespan,
        timeout_graceful_shutdown=timeout_graceful_shutdown,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:
                if task.done():
                    task.result()
                await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()
