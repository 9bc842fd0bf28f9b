"""`TaskTimer`: a task cancelled when its time is up, its own cancellation told from others."""

from __future__ import annotations

import asyncio

import pytest

from registry.task_timer import TaskTimer


async def _bounded(timer: TaskTimer, work: asyncio.Future[None]) -> str:
    try:
        await work
    except asyncio.CancelledError:
        if timer.cancelled_it():
            return "timed out"
        raise
    finally:
        timer.clear()
    return "done"


async def test_the_timer_cancels_the_task_and_knows_it_did() -> None:
    async def run() -> str:
        timer = TaskTimer.current()
        timer.set(0.01)
        return await _bounded(timer, asyncio.get_running_loop().create_future())

    task = asyncio.create_task(run())
    assert await task == "timed out"
    assert task.cancelling() == 0


async def test_work_done_in_time_is_not_cancelled() -> None:
    timer = TaskTimer.current()
    timer.set(30)
    done = asyncio.get_running_loop().create_future()
    done.set_result(None)
    assert await _bounded(timer, done) == "done"
    assert not timer.running and not timer.expired


async def test_another_cancellation_is_not_the_timers() -> None:
    async def run() -> str:
        timer = TaskTimer.current()
        timer.set(30)
        return await _bounded(timer, asyncio.get_running_loop().create_future())

    task = asyncio.create_task(run())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancellation_beside_the_timers_is_kept() -> None:
    async def run() -> str:
        task = asyncio.current_task()
        assert task is not None
        timer = TaskTimer.current()
        timer.set(0.01)
        asyncio.get_running_loop().call_later(0.01, task.cancel)  # the same loop turn
        return await _bounded(timer, asyncio.get_running_loop().create_future())

    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(run())


async def test_set_again_moves_the_time_and_clear_stops_it() -> None:
    timer = TaskTimer.current()
    timer.set(0.01)
    timer.set(30)
    assert timer.running
    timer.clear()
    assert not timer.running
    # Timers fire in the order they are due: one due after the first delay comes after it.
    later = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_later(0.02, later.set_result, None)
    await later
    assert not timer.expired


async def test_a_timer_beside_another_times_the_same_task_on_its_own() -> None:
    async def run() -> tuple[str, bool]:
        outer = TaskTimer.current()
        outer.set(30)
        inner = outer.beside()
        inner.set(0.01)
        told = await _bounded(inner, asyncio.get_running_loop().create_future())
        running = outer.running and not outer.expired
        outer.clear()
        return told, running

    task = asyncio.create_task(run())
    assert await task == ("timed out", True)
    assert task.cancelling() == 0


def test_a_timer_needs_a_running_task() -> None:
    with pytest.raises(RuntimeError):
        TaskTimer.current()
