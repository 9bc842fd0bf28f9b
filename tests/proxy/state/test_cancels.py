"""A Redis error that comes with a cancellation redis-py dropped (Python 3.11's
`asyncio.wait_for`) ends the task as cancelled; without one it is the proxy's 503."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from proxy.errors import StateUnavailableError
from proxy.state.redis import RedisState, reaching
from proxy.state.redis_questions import RedisRelay
from testing.waiting import cancelled_within


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


class DroppingClient:
    """A Redis client whose first BLPOP drops a cancellation that comes during it, as redis-py
    under Python 3.11's `asyncio.wait_for` can, and answers that nothing came."""

    def __init__(self) -> None:
        self.popping = asyncio.Event()

    async def blpop(self, keys: list[str], timeout: float) -> None:  # noqa: ASYNC109 (redis-py's)
        if self.popping.is_set():
            await asyncio.Event().wait()
        self.popping.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()


async def test_a_relayed_answer_waited_for_ends_when_redis_drops_its_cancellation() -> None:
    # A turn waiting for an answer relayed through Redis is cancelled (its client went away,
    # the replica stops) while a BLPOP is under way, and the client drops the cancellation:
    # the wait still ends (it went on popping until the question's timeout).
    client = DroppingClient()
    state = RedisState(client, prefix="t:", max_entry_bytes=1024)  # type: ignore[arg-type]
    relay = RedisRelay(state, ttl_s=60)
    waiting = asyncio.ensure_future(relay.pop("answers", 3600))
    await client.popping.wait()
    await cancelled_within(waiting, "the relay's wait")
