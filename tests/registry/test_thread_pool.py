"""The executor's thread pool: daemon threads, results and errors, shutdown."""

from __future__ import annotations

import threading

import pytest

from registry.thread_pool import DaemonThreadPool


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
