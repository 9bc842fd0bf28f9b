"""Waiting for state no event announces (another process's, a server's over HTTP): polled,
with a deadline, never a fixed sleep."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["DEADLINE_S", "cancelled_within", "until"]


DEADLINE_S = 60.0
"""The default deadline: one that must not fire, however loaded the machine."""


async def until(
    check: Callable[[], bool | Awaitable[bool]],
    *,
    deadline_s: float = DEADLINE_S,
    every_s: float = 0.02,
) -> None:
    """Return once `check()` (sync, or a coroutine function) is true, polled every `every_s`.

    Raises:
        TimeoutError: it was not true within `deadline_s`.
    """
    async with asyncio.timeout(deadline_s):
        while True:
            seen = check()
            if await seen if inspect.isawaitable(seen) else seen:
                return
            await asyncio.sleep(every_s)


async def cancelled_within(task: asyncio.Future[Any], what: str) -> None:
    """Cancel `task` and check that it ends, cancelled, within `DEADLINE_S` (one that must
    not fire): a task whose cancellation a library dropped would go on instead.

    Raises:
        AssertionError: it did not end, or ended otherwise.
    """
    task.cancel()
    ended, _ = await asyncio.wait({task}, timeout=DEADLINE_S)
    task.cancel()
    assert task in ended, f"{what} did not stop"
    assert task.cancelled()
