"""A Redis error that comes with a cancellation redis-py dropped (Python 3.11's
`asyncio.wait_for`) ends the task as cancelled; without one it is the proxy's 503."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from proxy.errors import StateUnavailableError
from proxy.state.redis import reaching


async def _call(*, dropped: asyncio.Event | None) -> None:
    """A Redis call that fails; with `dropped`, after swallowing a cancellation."""
    if dropped is not None:
        with contextlib.suppress(asyncio.CancelledError):
            dropped.set()
            await asyncio.Event().wait()
    with reaching("reading the pins"):
        raise RedisConnectionError("Connection closed by server.")


async def test_a_redis_error_with_a_dropped_cancellation_ends_the_task_cancelled() -> None:
    dropped = asyncio.Event()
    task = asyncio.create_task(_call(dropped=dropped))
    await dropped.wait()
    task.cancel()
    await asyncio.wait({task}, timeout=60)  # a deadline that must not fire
    assert task.cancelled()


async def test_a_redis_error_alone_is_the_state_unavailable() -> None:
    with pytest.raises(StateUnavailableError, match="so reading the pins failed"):
        await _call(dropped=None)
