"""A timer's target: cancels a task when its time is up, and remembers that it did.

`asyncio.timeout` costs a context manager, a handle and a reschedule per use; a request's
body read and each upstream call need only a `loop.call_later(delay, expiry.expire)` whose
handle is cancelled in `finally`. The caller then tells its own cancellation from any other
as `asyncio.timeout` does: `expiry.expired and task.uncancel() <= cancelling`, with
`cancelling` read from `task.cancelling()` before the timer was set.

Here, not in `server/`, so that the upstreams (which may not import the server) and the
edge (which may import the upstreams) share it.
"""

from __future__ import annotations

import asyncio
from typing import Any


class Expiry:
    """Cancels a task when its time is up, and remembers that it did."""

    __slots__ = ("_task", "expired")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self._task = task
        self.expired = False

    def expire(self) -> None:
        self.expired = True
        self._task.cancel()
