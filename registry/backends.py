"""Execution backends: where a tool's function actually runs."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import functools
import inspect
from collections.abc import Callable
from concurrent.futures import Executor as PoolExecutor
from concurrent.futures import Future
from typing import Any, Protocol

from registry.errors import RegistryError
from registry.thread_pool import DaemonThreadPool, Job
from registry.tool import Tool

__all__ = ["ExecutionBackend", "InlineBackend", "ThreadBackend", "exit_error"]


OnStart = Callable[[], None]
"""Called (on the event loop) when a call stops waiting and starts running."""


class ExecutionBackend(Protocol):
    """Runs a tool's function with already-validated keyword arguments."""

    async def run(
        self, tool: Tool, arguments: dict[str, Any], *, on_start: OnStart | None = None
    ) -> Any:
        """Run the tool and return its raw result; the tool's exceptions propagate.

        A backend may first wait for a free worker; it calls `on_start` once the call has
        one and begins, so the caller can start the call's clock then.
        """
        ...


class InlineBackend:
    """Runs tools on the event loop: async tools are awaited, sync tools called directly.

    A sync tool run inline blocks the loop while it runs; that suits only tools that return
    at once (inline mode for a sync tool is an explicit choice, never the default).
    """

    async def run(
        self, tool: Tool, arguments: dict[str, Any], *, on_start: OnStart | None = None
    ) -> Any:
        """Await `tool.fn(**arguments)`, or call it when it is sync.

        Raises:
            RegistryError: the tool has no local function.
            RuntimeError: the tool raised SystemExit or KeyboardInterrupt.
        """
        fn = _function(tool)
        if on_start is not None:
            on_start()
        try:
            value = fn(**arguments)
            return await value if inspect.isawaitable(value) else value
        except (SystemExit, KeyboardInterrupt) as exc:
            raise exit_error(exc) from exc


class ThreadBackend:
    """Runs sync tools in a thread pool so they never block the event loop.

    Cancelling the awaiting task returns at once, but a thread cannot be interrupted: a
    function that is already running goes on until it returns, and its result is dropped.
    Its thread stays busy until then, and so does its tool when it is not concurrency-safe.
    A call waits for both on the event loop (for a free thread when `workers`, the pool's
    size, is given), so it takes a thread only when it can run at once: a hung tool holds
    one thread, never the threads of the calls queued behind it.
    """

    def __init__(self, pool: PoolExecutor, *, workers: int | None = None) -> None:
        self._pool = pool
        self._free = None if workers is None else _Slots(workers)
        self._idle: dict[str, asyncio.Lock] = {}

    async def run(
        self, tool: Tool, arguments: dict[str, Any], *, on_start: OnStart | None = None
    ) -> Any:
        """Call `tool.fn(**arguments)` in the pool, with the caller's context variables.

        Raises:
            RegistryError: the tool has no local function.
            RuntimeError: the tool raised SystemExit or KeyboardInterrupt.
        """
        fn = _function(tool)
        if tool.is_async:
            # An async tool asked for a thread (it blocks despite being async): it gets an
            # event loop of its own in the worker thread.
            fn = functools.partial(_run_coroutine, fn)
        call = functools.partial(contextvars.copy_context().run, fn, **arguments)
        loop = asyncio.get_running_loop()
        free = self._free
        if free is not None and tool.metadata.is_concurrency_safe and free.take_now():
            held = [free.give]  # the usual call: a thread free at once, no waiting to do
        else:
            held = await self._hold(tool)
        if isinstance(self._pool, DaemonThreadPool):
            return await _start(self._pool, loop, call, held, on_start)
        try:
            if on_start is not None:
                on_start()
            job = self._pool.submit(_guarded, call)
        except BaseException:
            _release(held)
            raise
        # The thread and the tool are free again when the function returns, not when its
        # caller gives up; one wake of the loop frees them and hands the result over.
        future: asyncio.Future[Any] = loop.create_future()
        job.add_done_callback(lambda done: _settle_soon(loop, done, future, held))
        try:
            return await future
        except asyncio.CancelledError:
            job.cancel()  # not started yet: then it never starts
            raise

    async def _hold(self, tool: Tool) -> list[Callable[[], None]]:
        """Wait until the tool is idle (if it runs one call at a time) and a thread is free;
        returns what to release once the call's function returns."""
        held: list[Callable[[], None]] = []
        try:
            if not tool.metadata.is_concurrency_safe:
                idle = self._idle.get(tool.qualified_name)
                if idle is None:  # not setdefault: that would build a lock per call
                    idle = self._idle[tool.qualified_name] = asyncio.Lock()
                await idle.acquire()
                held.append(idle.release)
            if self._free is not None:
                await self._free.take()
                held.append(self._free.give)
        except BaseException:
            _release(held)
            raise
        return held


def exit_error(exc: BaseException) -> RuntimeError:
    """The ordinary error that stands for a tool's SystemExit or KeyboardInterrupt.

    A tool that calls `sys.exit()` (an argparse tool given bad argv) means "this call
    failed", not "stop the server"; left as is, either would end the event loop.
    """
    return RuntimeError(f"the tool exited: {exc!r}")


def _release(held: list[Callable[[], None]]) -> None:
    for release in reversed(held):
        release()


def _settle_soon(
    loop: asyncio.AbstractEventLoop,
    job: Future[Any],
    future: asyncio.Future[Any],
    held: list[Callable[[], None]],
) -> None:
    # Called from the worker thread, or from whichever thread cancelled the job; a loop
    # that is already closed has nobody left waiting.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(_settle, job, future, held)


def _settle(job: Future[Any], future: asyncio.Future[Any], held: list[Callable[[], None]]) -> None:
    """On the loop: free what the call held, and give its outcome to the caller, if it
    still waits."""
    _release(held)
    if future.done():
        return
    if job.cancelled():
        future.cancel()
        return
    error = job.exception()
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(job.result())


async def _start(
    pool: DaemonThreadPool,
    loop: asyncio.AbstractEventLoop,
    call: Callable[[], Any],
    held: list[Callable[[], None]],
    on_start: OnStart | None,
) -> Any:
    """`run` on the proxy's own pool: the same steps with a `Job` for a Future (its
    SystemExit or KeyboardInterrupt is mapped on the loop, by `_settle_job`)."""
    future: asyncio.Future[Any] = loop.create_future()
    job = Job(call, functools.partial(_settle_job_soon, loop, future, held))
    try:
        if on_start is not None:
            on_start()
        pool.start(job)
    except BaseException:
        _release(held)
        raise
    try:
        return await future
    except asyncio.CancelledError:
        job.cancel()  # not started yet: then it never starts
        raise


def _settle_job_soon(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    held: list[Callable[[], None]],
    job: Job,
) -> None:
    # As `_settle_soon`, for a `Job`; a try, not `contextlib.suppress`: three Python calls
    # fewer on the worker while the owner's thread may be waiting for the GIL.
    try:
        loop.call_soon_threadsafe(_settle_job, job, future, held)
    except RuntimeError:
        return  # the loop is closed: nobody is left waiting


def _settle_job(job: Job, future: asyncio.Future[Any], held: list[Callable[[], None]]) -> None:
    """As `_settle`, for a `Job`."""
    _release(held)
    if future.done():
        return
    error = job.error
    if job.cancelled:
        future.cancel()
    elif error is None:
        future.set_result(job.value)
    elif isinstance(error, SystemExit | KeyboardInterrupt):
        exited = exit_error(error)
        exited.__cause__ = error  # as `raise ... from` in `_guarded`
        future.set_exception(exited)
    else:
        future.set_exception(error)


class _Slots:
    """The pool's threads, counted on the event loop: at most `count` held at once, waiters
    served in turn. `asyncio.Semaphore` with a synchronous `take_now` for the usual call,
    which finds one free (its `acquire` is a coroutine, a lock check and a generator)."""

    __slots__ = ("_free", "_waiters")

    def __init__(self, count: int) -> None:
        self._free = count
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    def take_now(self) -> bool:
        """Take one if one is free and nobody waits before; whether it was taken."""
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return True
        return False

    async def take(self) -> None:
        """Take one, waiting in turn for it.

        Raises:
            asyncio.CancelledError: cancelled while waiting; nothing is held then.
        """
        if self.take_now():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give()  # handed one just as the waiting was cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):  # `give` may have dropped it already
                    self._waiters.remove(waiter)
            raise

    def give(self) -> None:
        """Give one back: to the first waiter still waiting, else to the free ones."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1


def _guarded(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except (SystemExit, KeyboardInterrupt) as exc:
        raise exit_error(exc) from exc


def _run_coroutine(fn: Any, **arguments: Any) -> Any:
    async def wait() -> Any:
        return await fn(**arguments)

    return asyncio.run(wait())


def _function(tool: Tool) -> Any:
    if tool.fn is None:
        raise RegistryError(f"tool {tool.qualified_name!r} has no local function to run")
    return tool.fn
