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

STARTUP_S = 120
"""How long a server may take to start: a deadline that must not fire, however loaded the
machine (a proxy starts its sources, MCP servers among them, before it serves)."""
STOP_S = 120
"""How long a server may take to stop (its drain, with no `timeout_graceful_shutdown` as
long as its connections stay open, and its lifespan's shutdown): a deadline that must not
fire, past which the test fails rather than waits for pytest's hang detector."""
KEEP_ALIVE_S = 60
"""How long a test server keeps an idle connection: longer than its clients keep one (httpx,
under the OpenAI and Anthropic SDKs, 5 s; aiohttp 15 s), so the client always gives an idle
connection up first. At uvicorn's 5 s a server could close one just as a client sent its next
request on it, which failed (the SDKs here do not retry): a module's proxies, kept between
tests, met it once under load (test_native_formats.py, httpx ReadError)."""
_TICK_S = 0.1
"""uvicorn's own tick, at which it refreshes its `date` header."""
_DRAINED_EVERY_S = 0.005
"""How often a stopping server looks whether its connections and tasks are done."""


class _Server(uvicorn.Server):
    """uvicorn's server, stopped by `stop()` at once rather than at its next 0.1 s tick, and
    drained by looking every 5 ms instead of a 0.1 s sleep and 0.1 s polls: the same steps in
    the same order (stop accepting, ask each connection to close, wait for them and the
    tasks within `timeout_graceful_shutdown`, then the lifespan's shutdown), without the
    fixed waits, which were a fifth of a second of every test that starts a server."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._stopping = asyncio.Event()
        self.serving = asyncio.Event()

    def stop(self) -> None:
        self.should_exit = True
        self._stopping.set()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.serving.set()

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864_000
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_TICK_S):
                    await self._stopping.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        state = self.server_state
        for connection in list(state.connections):
            connection.shutdown()
        try:
            async with asyncio.timeout(self.config.timeout_graceful_shutdown):
                while state.connections or state.tasks:  # noqa: ASYNC110 (nothing announces it)
                    await asyncio.sleep(_DRAINED_EVERY_S)
                for server in self.servers:
                    await server.wait_closed()
        except TimeoutError:
            for task in state.tasks:
                task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
        if not self.force_exit:
            await self.lifespan.shutdown()


@contextlib.asynccontextmanager
async def serve_app(
    app: Any,
    *,
    lifespan: Literal["on", "off", "auto"] = "on",
    timeout_graceful_shutdown: int | None = None,
    server: ServerConfig | None = None,
    keep_alive_s: int = KEEP_ALIVE_S,
    stop_s: float = STOP_S,
) -> AsyncIterator[str]:
    """Serve `app` on an ephemeral loopback port (bound before uvicorn starts, so no other
    process can take it); yields its root URL, `http://127.0.0.1:PORT`, once it serves.

    It is served as `toolwire serve` serves: httptools with the head limits of `server`
    (the defaults when not given), keeping idle connections `keep_alive_s`.

    Raises:
        TimeoutError: it did not start within `STARTUP_S`, or stop within `stop_s` (its
            requests and then the server are cancelled, its connections closed).
    """
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(
        app,
        http=http_limits.protocol(server or ServerConfig()),
        log_level="warning",
        access_log=False,  # toolwire serve's default
        lifespan=lifespan,
        timeout_graceful_shutdown=timeout_graceful_shutdown,
        timeout_keep_alive=keep_alive_s,
    )
    uvicorn_server = _Server(config)
    task = asyncio.create_task(uvicorn_server.serve(sockets=[sock]))
    try:
        serving = asyncio.ensure_future(uvicorn_server.serving.wait())
        try:
            async with asyncio.timeout(STARTUP_S):
                await asyncio.wait({serving, task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            serving.cancel()
        if task.done():
            task.result()  # its startup failed: its error
            raise RuntimeError("the server stopped before it served")
        yield f"http://127.0.0.1:{port}"
    finally:
        try:
            await _stop(uvicorn_server, task, stop_s)
        finally:
            sock.close()


async def _stop(server: _Server, task: asyncio.Task[None], stop_s: float) -> None:
    server.stop()
    try:
        done, _ = await asyncio.wait({task}, timeout=stop_s)
    except asyncio.CancelledError:
        task.cancel()  # the test is cancelled: so is its server, as when it awaited it
        raise
    if done:
        return task.result()
    state = server.server_state
    still = f"{len(state.connections)} connections and {len(state.tasks)} requests open"
    for request in list(state.tasks):
        request.cancel()
    for connection in list(state.connections):
        connection.transport.abort()
    task.cancel()
    await asyncio.wait({task}, timeout=stop_s)
    raise TimeoutError(f"the server did not stop within {stop_s} s ({still})")
