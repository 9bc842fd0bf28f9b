"""The drain: graceful shutdown's first phase, before the server stops listening.

On SIGTERM (or Ctrl-C) the listener stays open: new requests get 503 and `/readyz` says
`draining` (so a load balancer's readiness probe sees it), while the work already running
(every request but GETs, whose long-lived event streams would hold the drain open) goes on.
Once none is left, or `server.drain_s` has passed, the server is told to stop as uvicorn
would: it stops listening and cancels what still runs, then the sources close.
"""

from __future__ import annotations

import asyncio
import logging
import math
import signal
from collections.abc import Callable
from types import FrameType
from typing import Any

from ..errors import ProxyError
from ..server.asgi import Scope, Send, send_json
from ..server.context import REQUEST_ID_HEADER, context_of

log = logging.getLogger("toolwire.drain")

Stop = Callable[[int], None]
"""What stops the server, given the signal that asked for it."""
SignalHandler = Callable[[int, FrameType | None], Any]

_IDLE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Requests the drain does not wait for (reads, and the streams that follow events)."""


class Drain:
    """Counts the running work; once a signal came, refuses new requests and stops the
    server when the work is done or the time is up."""

    def __init__(self) -> None:
        self.draining = False
        self._running = 0
        self._signal: int | None = None
        self._stop: Stop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._ends = math.inf
        """When the drain's time is up (the event loop's clock), once a signal began it."""

    def admit(self, method: str) -> bool:
        """A request with this method has begun: True when the drain waits for it to end
        (counted, as by `enter`; `leave` at its end)."""
        if method in _IDLE_METHODS:
            return False
        self._running += 1
        return True

    def enter(self) -> None:
        """Work the drain waits for has begun."""
        self._running += 1

    def leave(self) -> None:
        """A request the drain waits for has ended: the last one, in a drain, stops the server."""
        self._running -= 1
        if self.draining and self._running == 0:
            self._finish()

    def begin(self) -> None:
        """Refuse new requests from now on (without a server to stop: tests, embedding)."""
        self.draining = True

    def left_s(self) -> float:
        """How long the drain's time lasts still (0 once up; infinite before a signal): what
        the server's stop may still wait for (`stopping.answering_first`)."""
        return max(0.0, self._ends - asyncio.get_running_loop().time())

    async def refuse(self, scope: Scope, send: Send) -> None:
        """A refused request's 503, in its route's error shape (readiness says `draining`,
        for a load balancer's probe). It closes the connection, so the client's next attempt
        finds another replica (or this one gone). The edge counts and logs it
        (`Telemetry.account`): its telemetry never began."""
        context = context_of(scope)
        route = context.route
        headers = {REQUEST_ID_HEADER: context.request_id, "connection": "close"}
        context.stats.status = 503
        if route.draining == "reported":
            await send_json(send, 503, {"status": "draining"}, headers)
        else:
            error = ProxyError("the proxy is shutting down", status=503, code="shutting_down")
            await send_json(send, 503, route.shape(error), headers)

    def signal_handler(self, stop: Stop, limit_s: float) -> SignalHandler:
        """A handler for `signal.signal` (call it in the event loop's thread, loop running):
        the first signal begins the drain; `stop` runs once the work is done or after
        `limit_s`. A second SIGINT stops at once; a second SIGTERM changes nothing (a
        process group's signal can reach a worker both directly and from its supervisor)."""
        loop = asyncio.get_running_loop()

        def handle(sig: int, frame: FrameType | None) -> None:
            # Signal handlers run between any two bytecodes: act from the loop instead.
            loop.call_soon_threadsafe(self._on_signal, sig, stop, limit_s, loop)

        return handle

    def _on_signal(
        self, sig: int, stop: Stop, limit_s: float, loop: asyncio.AbstractEventLoop
    ) -> None:
        if self._signal is not None:
            if sig == signal.SIGINT:
                stop(sig)
            return
        self._signal, self._stop = sig, stop
        self._ends = loop.time() + limit_s
        self.draining = True
        log.info(
            "%s: draining %d running request(s) for up to %gs; new requests get 503",
            signal.Signals(sig).name,
            self._running,
            limit_s,
        )
        if self._running == 0:
            self._finish()
        else:
            self._timer = loop.call_later(limit_s, self._finish)

    def _finish(self) -> None:
        stop, sig = self._stop, self._signal
        if stop is None or sig is None:
            return  # drained by `begin`, or already finished
        self._stop = None
        if self._timer is not None:
            self._timer.cancel()
        if self._running:
            log.warning("drain time is up: cancelling %d running request(s)", self._running)
        stop(sig)
