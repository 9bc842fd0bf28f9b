"""granian (a Rust HTTP server) at the edge, for `bench/edge.py`: the pass-through's app and
`toolwire serve`'s, each served by granian instead of uvicorn, in one process.

    python bench/edge_granian.py passthrough --upstream URL --port N
    python bench/edge_granian.py toolwire --config proxy.yaml --port N [--log-level warning]

granian runs embedded (`granian.server.embed.Server`): its Rust runtime reads and writes the
sockets on a thread of its own and hands each request to this process's uvloop, where the
app runs as under uvicorn. The toolwire target is served as `toolwire serve` serves one
worker (`proxy/server/serving.py`), so it costs what a granian edge would cost:

* the socket is bound first (`proxy.server.listener.listen`), the state checked, the
  sources started, the upstreams probed, the start-up heap frozen;
* the drain on SIGTERM or SIGINT (`proxy.telemetry.Drain`), then granian is stopped;
* the head limits, on granian's own options where it has them: `server.header_timeout_s`
  is its header read timeout (a late head's connection is closed without a 408);
  `server.max_header_bytes` bounds its read buffer (at least 8 KiB, its minimum, plus the
  room of one field: a head far past it gets granian's bare 431); within that buffer the
  head is measured as uvicorn's path measures it, and `server.max_headers` counted (granian
  itself takes at most 100 fields), by `HeadCheck`, which answers 431 in the route's error
  shape before authentication.

The listening socket has TCP_NODELAY set, which accepted connections inherit: granian sets
none on a socket it is handed, and a stream's small writes would then wait for delayed
ACKs (about 40 ms per streamed request on loopback). Not here: `--workers` (granian's
embedded server runs one), the access log.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging.config
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import orjson
import uvloop
from granian._granian import SocketHolder
from granian.constants import HTTPModes, Interfaces
from granian.http import HTTP1Settings
from granian.server.embed import Server

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from proxy.config import ServerConfig, Settings, load_settings
from proxy.errors import ProxyError
from proxy.server.app import create_app
from proxy.server.asgi import Receive, Scope, Send
from proxy.server.http_limits import HeadLimits, HeadTooLargeError
from proxy.server.listener import listen
from proxy.server.routes import route_of
from proxy.server.routing import App
from proxy.server.serving import _bound_to, tune_collector, warn_unreachable
from proxy.server.sources import started
from proxy.state import check_state
from proxy.telemetry import Drain, log_config

GRANIAN_MIN_BUFFER = 8192
"""The smallest read buffer granian takes."""
FIELD_ROOM = 8192
"""Read-buffer room beyond `max_header_bytes`: a head up to that much larger still reaches
`HeadCheck`, which answers in the route's shape; one larger gets granian's own bare 431."""
GRANIAN_MAX_FIELDS = 100
"""How many header fields granian's parser takes at most."""
BACKLOG = 2048


def http1_settings(server: ServerConfig) -> HTTP1Settings:
    """granian's HTTP/1 options for `server`'s head limits."""
    return HTTP1Settings(
        header_read_timeout=max(1, round(server.header_timeout_s * 1000)),
        keep_alive=True,
        max_buffer_size=max(GRANIAN_MIN_BUFFER, server.max_header_bytes + FIELD_ROOM),
    )


class HeadCheck:
    """Refuses a head past `max_bytes` or `max_fields` with a 431 in the route's error shape
    before the app (and so authentication) sees the request; keeps the tasks of the requests
    running, which `cancel` cancels (granian, stopped, cancels none of them)."""

    def __init__(self, app: App, limits: HeadLimits) -> None:
        self.app = app
        self._max_bytes = limits.max_bytes
        self._max_fields = min(limits.max_fields, GRANIAN_MAX_FIELDS)
        self._running: set[asyncio.Task[Any]] = set()

    def cancel(self) -> None:
        for task in self._running:
            task.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = scope["headers"]
            if len(headers) > self._max_fields:
                error = f"the request has more than {self._max_fields} header fields"
                await _refuse(scope, send, HeadTooLargeError(error))
                return
            size = len(scope["raw_path"]) + len(scope["query_string"]) + 1
            size += sum([len(name) + len(value) for name, value in headers])
            if size > self._max_bytes:
                error = f"the request's line and headers exceed {self._max_bytes} bytes"
                await _refuse(scope, send, HeadTooLargeError(error))
                return
        task = asyncio.current_task()
        assert task is not None
        self._running.add(task)
        try:
            await self.app(scope, receive, send)
        finally:
            self._running.discard(task)


async def _refuse(scope: Scope, send: Send, error: ProxyError) -> None:
    body = orjson.dumps(route_of(scope["path"]).shape(error))
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Embedded(Server):
    """granian's embedded server on a socket bound beforehand."""

    def __init__(self, app: Any, sock: socket.socket, **options: Any) -> None:
        host, port = sock.getsockname()[:2]
        defaults: dict[str, Any] = {"interface": Interfaces.ASGI, "http": HTTPModes.http1}
        defaults["websockets"] = False
        defaults |= {"runtime_threads": 1, "backlog": BACKLOG}
        super().__init__(app, address=host, port=port, **(defaults | options))
        self._bound = sock

    def _init_shared_socket(self) -> None:
        # granian's stub gives SocketHolder no arguments; it takes (fd, uds, backlog), and
        # owns the descriptor: it gets a copy, the socket keeps its own.
        fd = os.dup(self._bound.fileno())
        holder = SocketHolder(fd, False, BACKLOG)  # type: ignore[call-arg]
        self._ssp = None
        self._shd = holder  # type: ignore[assignment]
        self._sfd = holder.get_fd()


def _nodelay(sock: socket.socket) -> socket.socket:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


# --------------------------------------------------------------------------- pass-through


async def serve_passthrough(upstream: str, host: str, port: int) -> None:
    """bench/passthrough.py's app (no tool injection) under granian until SIGTERM."""
    from bench.passthrough import PassThrough

    sock = _nodelay(listen(host, port))
    server = Embedded(PassThrough(upstream), sock, log_enabled=False)
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, server.stop)
    await server.serve()


# --------------------------------------------------------------------------- toolwire


def serve_toolwire(config: str, host: str | None, port: int, log_level: str) -> None:
    """`toolwire serve --config CONFIG` (one worker), granian at the edge."""
    settings = load_settings(config)
    logs = _granian_logs(log_config("text", log_level), log_level)
    logging.config.dictConfig(logs)
    host = host or settings.server.host
    with _nodelay(listen(host, port)) as sock:
        settings = _bound_to(settings, host, sock.getsockname()[1])
        asyncio.run(check_state(settings))
        uvloop.run(_serve_toolwire(settings, sock, logs, log_level))


async def _serve_toolwire(
    settings: Settings, sock: socket.socket, logs: dict[str, Any], log_level: str
) -> None:
    probing = asyncio.create_task(warn_unreachable(settings.upstreams))
    try:
        async with started(settings) as (registry, sources):
            await probing
            app = create_app(settings, registry=registry, sources=sources)
            edge = HeadCheck(app, HeadLimits.of(settings.server))
            server = Embedded(
                edge,
                sock,
                http1_settings=http1_settings(settings.server),
                log_level=log_level,
                log_dictconfig=logs,
            )
            # The app's shutdown (its lifespan) runs in granian's worker, given this long.
            server.workers_kill_timeout = 10
            _drain_on_signals(app.telemetry.drain, edge, server, settings.server.drain_s)
            gc.freeze()
            tune_collector()
            try:
                await server.serve()
            except TimeoutError:  # granian's embedded server raises it when the time is up
                logging.getLogger("toolwire").warning("the app's shutdown took over 10 s")
    finally:
        if not probing.done():
            probing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await probing


def _drain_on_signals(drain: Drain, edge: HeadCheck, server: Embedded, limit_s: float) -> None:
    def stop(sig: int) -> None:
        # After the drain: what still runs (requests past `drain_s`, GET streams) is
        # cancelled at once, where uvicorn gives it a second.
        edge.cancel()
        server.stop()

    handler = drain.signal_handler(stop, limit_s)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)


def _granian_logs(logs: dict[str, Any], level: str) -> dict[str, Any]:
    """Toolwire's logging config with granian's loggers sent to its handler."""
    loggers = dict(logs["loggers"])
    for name in ("_granian", "granian.access"):
        loggers[name] = {"handlers": [], "level": level.upper(), "propagate": True}
    return {**logs, "loggers": loggers}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="pass-through or toolwire under granian")
    commands = parser.add_subparsers(dest="command", required=True)
    passthrough = commands.add_parser("passthrough")
    passthrough.add_argument("--upstream", required=True, help="base URL, e.g. http://h:p/v1")
    toolwire = commands.add_parser("toolwire")
    toolwire.add_argument("--config", required=True)
    for sub in (passthrough, toolwire):
        sub.add_argument("--host", default=None)
        sub.add_argument("--port", type=int, required=True)
        sub.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    if args.command == "passthrough":
        uvloop.run(serve_passthrough(args.upstream, args.host or "127.0.0.1", args.port))
    else:
        serve_toolwire(args.config, args.host, args.port, args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
