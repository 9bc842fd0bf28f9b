"""Tasks started at once: the first step runs before `start_task` returns, as the task (so
`asyncio.timeout` and `current_task` work), and everything after it, cancellation included,
reaches the coroutine as in any task."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine
from typing import Any

import pytest

from proxy.codemode.eager import start_task

LABEL: contextvars.ContextVar[str] = contextvars.ContextVar("label", default="")


async def started(coroutine: Coroutine[Any, Any, Any]) -> tuple[asyncio.Task[Any], list[str]]:
    """`coroutine` started from a callback of the loop (outside any task, as the sandbox
    does); what it had logged when `start_task` returned."""
    loop = asyncio.get_running_loop()
    made: asyncio.Future[tuple[asyncio.Task[Any], list[str]]] = loop.create_future()
    log: list[str] = []

    def start() -> None:
        task = start_task(loop, coroutine, contextvars.copy_context())
        made.set_result((task, list(log)))

    loop.call_soon(start)
    task, before = await made
    log.extend(before)
    return task, before


async def test_a_coroutine_that_never_waits_is_done_in_its_first_step() -> None:
    seen: list[str] = []

    async def instant() -> int:
        seen.append("ran")
        assert asyncio.current_task() is not None
        async with asyncio.timeout(5):  # noqa: ASYNC100 - entering one needs a current task
            value = 7
        return value

    task, _ = await started(instant())
    assert seen == ["ran"]  # before the loop went round again
    assert await task == 7


async def test_a_coroutine_that_waits_goes_on_in_its_task_with_its_context() -> None:
    steps: list[str] = []

    async def waits() -> str:
        LABEL.set("mine")
        steps.append("first")
        me = asyncio.current_task()
        async with asyncio.timeout(5):
            await asyncio.sleep(0.01)
        assert asyncio.current_task() is me
        steps.append("second")
        return LABEL.get()

    task, _ = await started(waits())
    assert steps == ["first"]
    assert await task == "mine" and steps == ["first", "second"]
    assert LABEL.get() == ""  # the caller's context is untouched


@pytest.mark.parametrize("when", ["at once", "after a turn"])
async def test_cancelling_reaches_the_coroutine_where_it_waits(when: str) -> None:
    cleaned: list[str] = []

    async def waits() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cleaned.append("cancelled")
            raise

    task, _ = await started(waits())
    if when == "after a turn":
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["cancelled"]


async def test_an_error_of_the_first_step_is_the_tasks() -> None:
    async def fails() -> None:
        raise ValueError("at once")

    task, _ = await started(fails())
    with pytest.raises(ValueError, match="at once"):
        await task


async def test_a_timeout_entered_in_the_first_step_cancels_the_task() -> None:
    async def slow() -> str:
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(10)
        except TimeoutError:
            return "timed out"
        return "not timed out"

    task, _ = await started(slow())
    assert await task == "timed out"
