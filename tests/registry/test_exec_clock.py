"""A call's timeout (the executor's clock) beside its caller's own deadlines and cancellation,
and paused while someone else is waited for."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from registry import Executor, TaskTimer, Tool, ToolCall
from registry.clock import call_clock
from testing.waiting import until

TIMEOUT_S = 0.2


@pytest.fixture
def executor() -> Iterator[Executor]:
    with Executor(default_timeout_s=TIMEOUT_S) as ex:
        yield ex


def _call() -> ToolCall:
    return ToolCall(id="c1", name="t", arguments="{}")


async def hang() -> None:
    await asyncio.Event().wait()


async def test_a_call_past_its_timeout_is_a_timeout_and_its_caller_is_not_cancelled(
    executor: Executor,
) -> None:
    async with asyncio.timeout(30):  # a caller's own, longer, deadline around the call
        result = await executor.execute(Tool.from_function(hang), _call())
        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0
        await asyncio.sleep(0)  # no cancellation is left pending for the caller

    assert result.error_kind == "timeout"
    assert result.content.endswith(f"the tool did not finish within {TIMEOUT_S:g} seconds")


async def test_a_call_timed_beside_its_callers_timer_times_out_alone(executor: Executor) -> None:
    # The caller's timer (the turn's budget in the loop) lends the call's clock its task.
    caller = TaskTimer.current()
    caller.set(30)
    try:
        result = await executor.execute(Tool.from_function(hang), _call(), timer=caller)
        assert caller.running and not caller.expired
    finally:
        caller.clear()
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    assert result.error_kind == "timeout"


async def test_a_callers_timer_firing_first_is_the_callers_not_a_timeout_result() -> None:
    with Executor(default_timeout_s=30) as executor:
        caller = TaskTimer.current()
        caller.set(TIMEOUT_S)
        try:
            with pytest.raises(asyncio.CancelledError):
                await executor.execute(Tool.from_function(hang), _call(), timer=caller)
            assert caller.cancelled_it()
        finally:
            caller.clear()


async def test_a_callers_shorter_deadline_is_the_callers_not_a_timeout_result() -> None:
    with Executor(default_timeout_s=30) as executor, pytest.raises(TimeoutError):
        async with asyncio.timeout(TIMEOUT_S):
            await executor.execute(Tool.from_function(hang), _call())


async def test_a_caller_cancelled_as_the_call_times_out_stays_cancelled(
    executor: Executor,
) -> None:
    # The caller's cancellation and the call's timeout in one loop turn: the caller's wins.
    async def both() -> None:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().call_later(TIMEOUT_S, task.cancel)
        await executor.execute(Tool.from_function(hang), _call())

    with pytest.raises(asyncio.CancelledError):
        await both()


async def test_time_paused_does_not_count_against_the_timeout(executor: Executor) -> None:
    async def asks_someone() -> str:
        clock = call_clock.get()
        assert clock is not None
        started = time.monotonic()
        with clock.paused():  # as a call whose server asks its caller a question
            await until(lambda: time.monotonic() - started > 3 * TIMEOUT_S)
        return "answered"

    result = await executor.execute(Tool.from_function(asks_someone), _call())

    assert (result.error_kind, result.content) == (None, "answered")


async def test_a_call_paused_then_slow_still_times_out(executor: Executor) -> None:
    async def pauses_then_hangs() -> None:
        clock = call_clock.get()
        assert clock is not None
        with clock.paused():
            await asyncio.sleep(0)
        await hang()

    result = await executor.execute(Tool.from_function(pauses_then_hangs), _call())

    assert result.error_kind == "timeout"
