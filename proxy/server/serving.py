"""`toolwire serve`: one process or uvicorn's workers, and the drain on SIGTERM or SIGINT.

On a signal the drain (`proxy.telemetry.Drain`) comes first: the server keeps listening,
new requests get 503 and running work finishes, up to `server.drain_s`; then uvicorn is
told to stop as its own handler would, cancels what is left and returns, and the sources
close. With `--workers` each worker drains the same way: the supervisor passes the signal on.
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
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn

from ..config import ServerConfig, Settings, UpstreamConfig, load_settings
from ..state import NOT_SHARED, check_state
from ..telemetry import MULTIPROC_ENV, Drain, Stop, log_config
from ..upstreams import probe_all
from . import http_limits
from .app import create_app
from .listener import BindError, listen
from .sources import started
from .stopping import Supervisor, answering_first

__all__ = ["app_from_env", "serve", "started", "tune_collector"]

_BOUND_ENV = "TOOLWIRE_BOUND"
"""`HOST PORT` that `toolwire serve --workers` passes to its workers."""
_CANCEL_AFTER_DRAIN_S = 1
"""After the drain, how long uvicorn waits for what still runs (GETs' event streams, work
the drain gave up on) before cancelling it."""
_YOUNG_GC_THRESHOLD = 10_000
"""Container objects allocated (net of those freed) between two young-generation passes of
the cyclic collector; CPython's default is 700. Its count never drops below 0, so the
objects of many requests in flight (frames, dicts, tasks) cross 700 again and again, and
each pass walks them all: at c=64, 27k instructions a request unstreamed and 43k streamed
(none at c=1), 5k and 9k at 10,000. Cyclic garbage waits at most 10,000 allocations."""
log = logging.getLogger("toolwire")


def serve(args: argparse.Namespace, settings: Settings) -> int:
    """Serve until a signal has drained the server; the exit status."""
    host = args.host or settings.server.host
    port = args.port if args.port is not None else settings.server.port
    logs = log_config(args.log_format, args.log_level)
    logging.config.dictConfig(logs)
    try:
        sock = listen(host, port)  # first: a taken port is reported before anything starts
    except BindError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    with sock:
        port = sock.getsockname()[1]
        settings = _bound_to(settings, host, port)
        asyncio.run(check_state(settings))  # an unreachable Redis is a clean exit 1
        if args.workers > 1:
            _serve_workers(settings, sock, args, logs)
            return 0
        import uvloop

        uvloop.run(_serve_one(settings, sock, args))
    return 0


def _serve_workers(
    settings: Settings, sock: socket.socket, args: argparse.Namespace, logs: dict[str, Any]
) -> None:
    """uvicorn's supervisor and `--workers` processes, each serving on `sock`."""
    if settings.state.backend == "memory":
        print(
            f"toolwire: {args.workers} workers with state.backend: memory: each worker keeps "
            f"its own {NOT_SHARED}; a follow-up that lands on another worker will not find "
            "them (set state.backend: redis to share them)",
            file=sys.stderr,
        )
    asyncio.run(warn_unreachable(settings.upstreams))  # once, here, not in every worker
    # Each worker process builds its own app (and starts its own sources) from the file.
    os.environ["TOOLWIRE_CONFIG"] = os.path.abspath(args.config)
    os.environ[_BOUND_ENV] = f"{settings.server.host} {settings.server.port}"
    config = uvicorn.Config(
        "proxy.server.serving:app_from_env",
        factory=True,
        host=settings.server.host,
        port=settings.server.port,
        workers=args.workers,
        http=http_limits.protocol(settings.server),
        loop="uvloop",
        log_level=args.log_level,
        log_config=logs,
        access_log=args.access_log,
        timeout_graceful_shutdown=_CANCEL_AFTER_DRAIN_S,
        # uvicorn's annotation says int; its keep-alive timer takes any number of seconds.
        timeout_keep_alive=settings.server.keep_alive_s,  # type: ignore[arg-type]
        timeout_worker_healthcheck=settings.server.worker_healthcheck_s,
    )
    with _metrics_shared_by_workers(), contextlib.suppress(KeyboardInterrupt):
        Supervisor(config, sockets=[sock]).run()
    _stop_resource_tracker()


async def _serve_one(settings: Settings, sock: socket.socket, args: argparse.Namespace) -> None:
    # The upstreams are probed while the sources start; neither keeps the other waiting.
    probing = asyncio.create_task(warn_unreachable(settings.upstreams))
    try:
        # Sources start before the server serves, so a broken source is a clean error exit.
        async with started(settings) as (registry, sources):
            await probing
            app = create_app(settings, registry=registry, sources=sources)
            config = uvicorn.Config(
                app,
                host=settings.server.host,
                port=settings.server.port,
                http=http_limits.protocol(settings.server),
                log_level=args.log_level,
                log_config=log_config(args.log_format, args.log_level),
                access_log=args.access_log,
                timeout_graceful_shutdown=_CANCEL_AFTER_DRAIN_S,
                timeout_keep_alive=settings.server.keep_alive_s,  # type: ignore[arg-type]
            )
            server = uvicorn.Server(config)
            # uvicorn installs `server.handle_exit` for SIGTERM and SIGINT when it starts.
            drain = app.telemetry.drain
            server.handle_exit = drain.signal_handler(  # type: ignore[method-assign,assignment]
                _stopper(server), settings.server.drain_s
            )
            answering_first(server, drain, settings.server.header_timeout_s)
            # What start-up built lives as long as the process: keep the collector off it.
            gc.freeze()
            tune_collector()
            # On SIGTERM the drain lets running requests finish while new ones get 503, then
            # uvicorn stops listening and returns; then the sources close.
            await server.serve(sockets=[sock])
    finally:
        if not probing.done():
            probing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await probing


async def warn_unreachable(upstreams: list[UpstreamConfig]) -> None:
    """Log a warning for each upstream that accepts no connection, and why; serving goes on
    (model servers often start after the proxy)."""
    for status in await probe_all(upstreams):
        if not status.reachable:
            log.warning(
                "upstream %r is unreachable: %s; serving anyway: requests for its models get "
                "a 502 until it is up",
                status.name,
                status.error,
            )


def _bound_to(settings: Settings, host: str, port: int) -> Settings:
    """`settings` with the address `--host` and `--port` chose: the bound host is one of the
    names the admin and `/mcp` answer to."""
    server = settings.server.model_copy(update={"host": host, "port": port})
    return settings.model_copy(update={"server": server})


def _stopper(server: uvicorn.Server) -> Stop:
    """Stop `server` as uvicorn's own handler would, without raising the signal again once
    it has stopped (which would kill the process with status -15)."""

    def stop(sig: int) -> None:
        if server.should_exit and sig == signal.SIGINT:
            server.force_exit = True  # a second Ctrl-C: stop waiting for running requests
        server.should_exit = True

    return stop


def _drain_worker(drain: Drain, server: ServerConfig) -> None:
    """In a `--workers` process: put the drain before uvicorn's signal handlers, which are
    installed by the time the app is built, and make uvicorn's stop answer what it took."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        handler = signal.getsignal(sig)
        serving = getattr(handler, "__self__", None)
        if isinstance(serving, uvicorn.Server):
            signal.signal(sig, drain.signal_handler(_stopper(serving), server.drain_s))
        elif callable(handler):  # uvicorn's handler wrapped by another library
            signal.signal(sig, drain.signal_handler(_calling(handler), server.drain_s))
    if isinstance(serving, uvicorn.Server):
        answering_first(serving, drain, server.header_timeout_s)


def _calling(handler: Callable[[int, Any], Any]) -> Stop:
    def stop(sig: int) -> None:
        handler(sig, None)

    return stop


def _stop_resource_tracker() -> None:
    """Stop and reap multiprocessing's resource tracker, which uvicorn's spawned workers
    started: left alone (Python 3.11) it exits only after this process, orphaned, so a
    child would outlive `toolwire serve`."""
    from multiprocessing import resource_tracker

    tracker = getattr(resource_tracker, "_resource_tracker", None)
    stop = getattr(tracker, "_stop", None)
    if stop is not None:
        stop()


@contextlib.contextmanager
def _metrics_shared_by_workers() -> Iterator[None]:
    """A folder where every worker keeps its metric values (prometheus-client's multiprocess
    mode), removed at exit; one the environment already names is used and kept."""
    if os.environ.get(MULTIPROC_ENV):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="toolwire-metrics-") as folder:
        os.environ[MULTIPROC_ENV] = folder
        try:
            yield
        finally:
            del os.environ[MULTIPROC_ENV]


def app_from_env() -> object:
    """The app for worker processes: the config path comes from TOOLWIRE_CONFIG."""
    settings = load_settings(os.environ.get("TOOLWIRE_CONFIG", "proxy.yaml"))
    if _BOUND_ENV in os.environ:
        host, _, port = os.environ[_BOUND_ENV].rpartition(" ")
        settings = _bound_to(settings, host, int(port))
    app = create_app(settings)
    _drain_worker(app.telemetry.drain, settings.server)
    tune_collector()
    return app


def tune_collector() -> None:
    """Collect the young generation every `_YOUNG_GC_THRESHOLD` net allocations, the older
    ones as CPython does."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(_YOUNG_GC_THRESHOLD, middle, old)
