"""A thread pool whose threads never keep the process alive: where sync tools run."""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

__all__ = ["DaemonThreadPool", "Job"]

P = ParamSpec("P")
T = TypeVar("T")

_Job = tuple[Future[Any], Callable[[], Any]]

_PENDING, _RUNNING, _CANCELLED, _FINISHED = range(4)


class Job:
    """A function for `DaemonThreadPool.start`: lighter than a Future (no condition, no
    callbacks list, one plain lock), for the one owner that awaits it. `settled(job)` is
    called once the job is over: on the thread that ran it, with `value` or `error` set, or
    on the thread that cancelled it before it started (`cancelled` is then true)."""

    __slots__ = ("_call", "_lock", "_settled", "_state", "error", "value")

    def __init__(self, call: Callable[[], Any], settled: Callable[[Job], None]) -> None:
        self._call = call
        self._settled = settled
        self._lock = threading.Lock()
        self._state = _PENDING
        self.value: Any = None
        self.error: BaseException | None = None

    @property
    def cancelled(self) -> bool:
        return self._state == _CANCELLED

    def cancel(self) -> bool:
        """Keep the job from starting; False when it already has (it then runs to its end)."""
        with self._lock:
            if self._state != _PENDING:
                return False
            self._state = _CANCELLED
        self._settled(self)
        return True

    def run(self) -> None:
        """Run the function, unless cancelled first, and report how it ended."""
        if self._execute():
            self._settled(self)

    def _execute(self) -> bool:
        """Run the function unless cancelled first; whether it ran (its outcome is then set,
        not yet reported)."""
        with self._lock:
            if self._state != _PENDING:
                return False
            self._state = _RUNNING
        try:
            self.value = self._call()
        except BaseException as exc:  # the owner gets it, as a Future's would
            self.error = exc
        self._state = _FINISHED
        return True


class DaemonThreadPool(Executor):
    """Runs submitted functions on up to `max_workers` daemon threads, started on demand.

    `concurrent.futures.ThreadPoolExecutor` joins its threads when the interpreter exits,
    `shutdown(wait=False)` or not; a tool's function that sleeps on after its call timed out
    (a thread cannot be interrupted) would then hold the process past its shutdown for as
    long as it runs. These threads are daemons and nothing joins them: the process exits
    when its main thread does, and a function still running is abandoned with it.

    Raises:
        ValueError: `max_workers` is not positive.
    """

    def __init__(self, max_workers: int, *, thread_name_prefix: str = "toolwire") -> None:
        if max_workers <= 0:
            raise ValueError("max_workers must be positive")
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._jobs: queue.SimpleQueue[_Job | Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._numbers = itertools.count()
        # One token per idle thread, put by a thread as it finishes a job and taken by the
        # job handed over next: an idle thread takes the next job, so a new thread starts only
        # when none is idle. A queue of tokens, not a threading.Semaphore: its put and take are
        # C calls, where the semaphore's condition runs a dozen Python calls per job.
        self._idle: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Schedule `fn(*args, **kwargs)`; its future has the outcome.

        Raises:
            RuntimeError: the pool was shut down.
        """
        future: Future[T] = Future()
        self._put((future, lambda: fn(*args, **kwargs)))
        return future

    def start(self, job: Job) -> None:
        """Schedule `job` (a sync tool's call: no Future, see `Job`).

        Raises:
            RuntimeError: the pool was shut down.
        """
        self._put(job)

    def _put(self, job: _Job | Job) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._jobs.put(job)
            try:
                self._idle.get_nowait()
            except queue.Empty:
                if len(self._threads) < self._max_workers:
                    self._start_thread()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Take no more jobs; threads end once the jobs queued before have run (`cancel_futures`:
        those not yet started are cancelled instead). `wait` joins the threads."""
        with self._lock:
            self._closed = True
            if cancel_futures:
                while True:
                    try:
                        job = self._jobs.get_nowait()
                    except queue.Empty:
                        break
                    if isinstance(job, Job):
                        job.cancel()
                    elif job is not None:
                        job[0].cancel()
            threads = list(self._threads)
            for _ in threads:
                self._jobs.put(None)
        if wait:
            for thread in threads:
                thread.join()

    def _start_thread(self) -> None:
        name = f"{self._prefix}_{next(self._numbers)}"
        thread = threading.Thread(target=self._work, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _work(self) -> None:
        _wait_to_be_scheduled()
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if isinstance(job, Job):
                ran = job._execute()
                # Idle before the owner hears of the outcome: the job it hands over next
                # finds this thread, and once the owner's thread wakes, this one only has to
                # reach `get` (where it lets go of the GIL).
                self._idle.put(None)
                if ran:
                    job._settled(job)
            else:
                _run(*job)
                self._idle.put(None)
            del job  # an idle thread holds nothing of the last job


def _wait_to_be_scheduled() -> None:
    """Make this thread SCHED_BATCH (Linux): woken, it waits for the CPU instead of preempting
    the thread that woke it.

    A job is handed over by the event loop's thread, which holds the GIL until it next polls;
    a worker that preempted it at once would only find the GIL taken and go back to sleep (two
    context switches for nothing on a shared core, about six per call where two do). A batch
    thread keeps its fair share of the CPU; only that wake-up preemption is given up. The
    threads and processes a tool starts inherit the policy.
    """
    with contextlib.suppress(AttributeError, OSError):  # not Linux, or refused
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))


def _run(future: Future[Any], call: Callable[[], Any]) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = call()
    except BaseException as exc:  # the future carries it, as the stdlib pool's does
        future.set_exception(exc)
    else:
        future.set_result(result)
