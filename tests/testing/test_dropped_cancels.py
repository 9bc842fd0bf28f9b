"""The plugin that makes redis-py drop cancellations (`testing/dropped_cancels.py`): a task
cancelled during a send gets the send's result, its cancellation still requested; the send's
timeout holds; and redis-py's connections get it only while it is on."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio.connection as redis_connection

from testing import dropped_cancels


async def _answer() -> str:
    return "OK"


async def test_a_cancellation_during_a_send_is_dropped_and_stays_requested() -> None:
    async def command() -> tuple[str, int]:
        reply = await dropped_cancels.dropping_wait_for(_answer(), 60)
        task = asyncio.current_task()
        assert task is not None
        return reply, task.cancelling()

    task = asyncio.ensure_future(command())
    await asyncio.sleep(0)  # the send is under way
    task.cancel()
    assert await task == ("OK", 1)


async def test_a_send_past_its_timeout_is_a_timeout() -> None:
    never = asyncio.Event()
    with pytest.raises(TimeoutError):
        await dropped_cancels.dropping_wait_for(never.wait(), 0)


def test_redis_sends_drop_cancellations_only_while_it_is_on() -> None:
    with dropped_cancels.dropping():
        assert redis_connection.asyncio.wait_for is dropped_cancels.dropping_wait_for
        assert redis_connection.asyncio.sleep is asyncio.sleep
    assert redis_connection.asyncio is asyncio
