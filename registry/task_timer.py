"""A timer that cancels a task when its time is up, and tells its own cancellation apart.

What `asyncio.timeout` does, for code on a hot path: on Python 3.11 every
`asyncio.get_running_loop()` (and `asyncio.current_task()` without a loop) makes a `getpid`
system call, and a timeout scope makes three or four of them (about 0.8 us each on a busy
2-core machine) besides five Python calls. A `TaskTimer` is made with the loop and the task
(one lookup by its maker, often none) and is a `loop.call_later` handle; the code it bounds
catches `asyncio.CancelledError` and asks `cancelled_it()` whether the cancellation is the
timer's alone, as `asyncio.timeout` asks (then it raises or returns its own timeout), else
lets it go on.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["TaskTimer"]


class TaskTimer:
    """Cancels `task` when a delay set by `set` passes (unless `clear`ed first)."""

    __slots__ = ("_cancelling", "_handle", "_loop", "_task", "expired")

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self._loop = loop
        self._task = task
        self._cancelling = task.cancelling()
        self._handle: asyncio.TimerHandle | None = None
        self.expired = False
        """The timer has cancelled the task."""

    @classmethod
    def current(cls) -> TaskTimer:
        """A timer for the running task.

        Raises:
            RuntimeError: no task is running.
        """
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:
            raise RuntimeError("a TaskTimer needs a running task")
        return cls(loop, task)

    def beside(self) -> TaskTimer:
        """Another timer for this timer's task, made without looking the running loop and
        task up (`current`'s two `getpid` system calls on Python 3.11)."""
        return TaskTimer(self._loop, self._task)

    @property
    def running(self) -> bool:
        """Whether a delay is set and has not passed."""
        return self._handle is not None

    def set(self, delay: float) -> None:
        """Cancel the task `delay` seconds from now (instead of when set before)."""
        if self._handle is not None:
            self._handle.cancel()
        self._handle = self._loop.call_later(delay, self._expire)

    def clear(self) -> None:
        """Cancel nothing (a cancellation already made stays)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def cancelled_it(self) -> bool:
        """Whether the cancellation the task is handling is this timer's alone (no other is
        pending beside it); ask once, on that cancellation."""
        return self.expired and self._task.uncancel() <= self._cancelling

    def _expire(self) -> None:
        self._handle = None
        self.expired = True
        self._task.cancel()
