"""Cancellations that redis-py can drop, kept.

On Python 3.11, `asyncio.wait_for` returns a result (or raises its own timeout) when the
awaited work ends as a cancellation arrives, and drops the cancellation (fixed in 3.12).
redis-py waits for its socket writes with `wait_for`, so a task cancelled in the middle of
a Redis call can come back with a reply or a `RedisError` instead of `CancelledError`, and
a loop that follows the store (pins, leases) would then run until the deadline of whoever
stops it. The task still shows the request in `Task.cancelling()`; `end_if_cancelled` ends
it there, and `redis.reaching` raises `CancelledError` in place of a Redis error that came
with one.
"""

from __future__ import annotations

import asyncio


def cancel_requested() -> bool:
    """Whether the running task's cancellation was requested and never taken back."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def end_if_cancelled() -> None:
    """Raise `CancelledError` if the running task's cancellation was requested (and perhaps
    dropped by a library on the way): for loops that follow a store until cancelled."""
    if cancel_requested():
        raise asyncio.CancelledError
