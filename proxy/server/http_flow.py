"""A connection's flow control, which also keeps its one timer on request bodies still coming
(`Flow`, `BodyTimer`), and the event a request's cycle and its connection share (`Signal`):
the parts of `http_cycle.py`'s cycle that outlive a request or are made for each for next
to nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.flow_control import FlowControl

from ..upstreams.expiry import Expiry


class Flow(FlowControl):
    """uvicorn's flow control of a connection, which also keeps the connection's one timer
    on request bodies still coming (`time_body`), as the protocol keeps one for heads and
    one for keep-alive: armed by the first read that waits for a body, re-armed only when it
    fires before the body then read is due, not armed and cancelled per read (under uvloop a
    cancelled timer costs the loop one more poll, a system call, before its next wait)."""

    _timed: BodyTimer | None = None
    """The read being timed, if any."""
    _timer: asyncio.TimerHandle | None = None
    _timer_due = 0.0

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(transport)
        self._loop = loop

    def time_body(self, task: asyncio.Task[Any], timeout_s: float) -> BodyTimer:
        """Time a body's read in `task` from now: the task is cancelled when `timeout_s`
        passes before the read ends (`BodyTimer.cancel`)."""
        timer = BodyTimer(task)
        timer.flow = self
        due = timer.due = self._loop.time() + timeout_s
        self._timed = timer
        if self._timer is None or self._timer_due > due:
            self._arm(due)
        return timer

    def close(self) -> None:
        """The connection is lost: its timer with it."""
        self._timed = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, due: float) -> None:
        if self._timer is not None:  # due later than this read: only a shorter timeout
            self._timer.cancel()
        self._timer = self._loop.call_at(due, self._due)
        self._timer_due = due

    def _due(self) -> None:
        self._timer = None
        timer = self._timed
        if timer is None:
            return  # no read waits: the next one arms the timer again
        if timer.due > self._loop.time():
            self._arm(timer.due)  # armed for an earlier read
            return
        self._timed = None
        timer.expire()


class BodyTimer(Expiry):
    """A body's read timed by its connection's `Flow`: it cancels the read's task when the
    body is due (and is then `expired`), unless the read ends first (`cancel`)."""

    __slots__ = ("due", "flow")
    due: float
    flow: Flow

    def cancel(self) -> None:
        """The read ended: no longer timed."""
        flow = self.flow
        if flow._timed is self:
            flow._timed = None


class Signal:
    """`asyncio.Event` as the cycle and the protocol use it, made per request for next to
    nothing: no arguments, no `__init__`, no running-loop lookup (`wait` is given the loop),
    its state in class attributes until it changes. It is read and set without a call where
    every request passes (`up` alone, when no one `waiters`)."""

    up = False
    """Whether it is set."""
    waiters: list[asyncio.Future[None]] | tuple[()] = ()
    """Those waiting for it to be set (a list of its own once one waits)."""

    def is_set(self) -> bool:
        return self.up

    def set(self) -> None:
        if not self.up:
            self.up = True
            for waiter in self.waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def clear(self) -> None:
        self.up = False

    async def wait(self, loop: asyncio.AbstractEventLoop) -> bool:
        if self.up:
            return True
        waiter = loop.create_future()
        waiters = self.waiters
        if isinstance(waiters, tuple):  # the first to wait
            waiters = self.waiters = []
        waiters.append(waiter)
        try:
            await waiter
            return True
        finally:
            waiters.remove(waiter)
