"""Where sync tools run: daemon threads (so none holds the process at exit), results and
errors, shutdown."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from registry import CachedTool, Executor, ThreadBackend, Tool, ToolCall
from registry.backends import _Slots
from registry.thread_pool import DaemonThreadPool, Job


def test_jobs_run_on_daemon_threads_and_report_their_outcome() -> None:
    pool = DaemonThreadPool(2, thread_name_prefix="t")
    try:
        ran_on = pool.submit(threading.current_thread).result(timeout=10)
        assert ran_on.daemon and ran_on.name.startswith("t_")
        with pytest.raises(ZeroDivisionError):
            pool.submit(lambda: 1 / 0).result(timeout=10)
        # An idle thread takes the next job: no second thread for jobs one after another.
        assert pool.submit(threading.current_thread).result(timeout=10) is ran_on
    finally:
        pool.shutdown()


def test_shutdown_cancels_queued_jobs_and_refuses_new_ones() -> None:
    pool = DaemonThreadPool(1)
    started, release = threading.Event(), threading.Event()

    def hold() -> bool:
        started.set()
        return release.wait(10)

    busy = pool.submit(hold)
    assert started.wait(10)
    queued = pool.submit(lambda: "never")
    pool.shutdown(wait=False, cancel_futures=True)
    assert queued.cancelled()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(lambda: None)
    release.set()
    assert busy.result(timeout=10) is True
    pool.shutdown(wait=True)  # the thread has ended


def on_a_daemon_thread() -> bool:
    """Whether this runs on a daemon thread."""
    return threading.current_thread().daemon


async def test_a_cached_sync_tool_runs_on_a_daemon_thread() -> None:
    """Cached and composed tools call a sync function through `call_async`: a thread of
    asyncio's default pool would be joined at exit, as the executor's pool's were."""
    cached = CachedTool(Tool.from_function(on_a_daemon_thread), ttl_s=60).tool
    with Executor() as executor:
        result = await executor.execute(cached, ToolCall("c", "on_a_daemon_thread", {}))
    assert result.content == "true"


def test_a_job_reports_once_and_a_cancelled_one_never_runs() -> None:
    pool = DaemonThreadPool(1)
    started, release = threading.Event(), threading.Event()
    reports: list[tuple[str, object]] = []
    reported = threading.Event()

    def settled(job: Job) -> None:
        outcome = "cancelled" if job.cancelled else repr(job.error) if job.error else job.value
        reports.append((threading.current_thread().name, outcome))
        if len(reports) == 4:
            reported.set()

    def hold() -> str:
        started.set()
        release.wait(10)
        return "held"

    try:
        busy = Job(hold, settled)
        pool.start(busy)
        assert started.wait(10)
        cancelled = Job(lambda: "never", settled)
        failing = Job(lambda: 1 / 0, settled)
        queued = Job(lambda: "later", settled)
        for job in (cancelled, failing, queued):
            pool.start(job)
        assert cancelled.cancel()  # reported at once, on this thread
        assert not cancelled.cancel()
        assert not busy.cancel()  # running: it goes on to its end
        release.set()
        assert reported.wait(10)
        here = threading.current_thread().name
        assert reports[0] == (here, "cancelled")
        assert [outcome for _, outcome in reports[1:]] == [
            "held",
            "ZeroDivisionError('division by zero')",
            "later",
        ]
        assert all(name != here for name, _ in reports[1:])
    finally:
        pool.shutdown()


def test_shutdown_cancels_queued_jobs_and_reports_them() -> None:
    pool = DaemonThreadPool(1)
    started, release = threading.Event(), threading.Event()
    cancelled: list[Job] = []

    def hold() -> None:
        started.set()
        release.wait(10)

    pool.start(Job(hold, lambda job: None))
    assert started.wait(10)
    queued = Job(lambda: "never", cancelled.append)
    pool.start(queued)
    pool.shutdown(wait=False, cancel_futures=True)
    assert cancelled == [queued] and queued.cancelled
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.start(Job(lambda: None, lambda job: None))
    release.set()


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="Linux scheduling policies")
def test_pool_threads_do_not_preempt_the_thread_that_hands_them_a_job() -> None:
    """A woken pool thread that preempted the event loop's thread would find the GIL held and
    sleep again: its threads are SCHED_BATCH, and the caller's thread keeps its policy."""
    before = os.sched_getscheduler(0)
    pool = DaemonThreadPool(1)
    try:
        assert pool.submit(os.sched_getscheduler, 0).result(timeout=10) == os.SCHED_BATCH
    finally:
        pool.shutdown()
    assert os.sched_getscheduler(0) == before


async def test_thread_slots_are_taken_in_turn_and_a_cancelled_waiter_holds_none() -> None:
    slots = _Slots(1)
    assert slots.take_now() and not slots.take_now()
    first = asyncio.create_task(slots.take())
    second = asyncio.create_task(slots.take())
    await asyncio.sleep(0)
    first.cancel()  # waiting, holds nothing
    await asyncio.sleep(0)
    slots.give()  # to the next waiter in turn
    await asyncio.wait_for(second, 10)
    assert first.cancelled() and not slots.take_now()
    slots.give()
    assert slots.take_now()  # one slot in all, free again


async def test_a_waiter_cancelled_just_before_a_slot_is_given_back_is_skipped() -> None:
    slots = _Slots(1)
    assert slots.take_now()
    first = asyncio.create_task(slots.take())
    second = asyncio.create_task(slots.take())
    await asyncio.sleep(0)
    first.cancel()
    slots.give()  # before the first woke to its cancellation: to the second
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 10)
    assert not slots.take_now()
    slots.give()
    assert slots.take_now() and not slots.take_now()


async def test_a_thread_slot_handed_to_a_cancelled_waiter_is_passed_on() -> None:
    slots = _Slots(1)
    assert slots.take_now()
    first = asyncio.create_task(slots.take())
    second = asyncio.create_task(slots.take())
    await asyncio.sleep(0)
    slots.give()  # handed to the first waiter...
    first.cancel()  # ...cancelled before it woke to take it
    await asyncio.wait_for(second, 10)
    with pytest.raises(asyncio.CancelledError):
        await first
    assert not slots.take_now()  # the second holds the one slot
    slots.give()
    assert slots.take_now() and not slots.take_now()


async def test_a_sync_tool_s_exit_is_an_ordinary_error_on_the_pool() -> None:
    def leave() -> None:
        raise SystemExit(3)

    pool = DaemonThreadPool(1)
    try:
        backend = ThreadBackend(pool, workers=1)
        with pytest.raises(RuntimeError, match="the tool exited: SystemExit") as caught:
            await backend.run(Tool.from_function(leave), {})
        assert isinstance(caught.value.__cause__, SystemExit)
    finally:
        pool.shutdown()
