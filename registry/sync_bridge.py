"""Calling async code from sync code and sync code from async code, loop or no loop."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["call_async", "call_sync", "run_sync"]

T = TypeVar("T")


def run_sync(awaitable: Awaitable[T]) -> T:
    """Wait for `awaitable` from sync code, whether or not this thread runs an event loop.

    Without a running loop it runs on a new one here. Inside a running loop it cannot
    nest, so it runs on a new loop in a helper thread while this thread waits; that blocks
    the calling loop for the duration, which is what calling async code synchronously means.
    """

    async def wait() -> T:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolwire-sync") as helper:
        return helper.submit(context.run, asyncio.run, wait()).result()


def call_sync(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Call a sync or async function from sync code and return its result."""
    value = fn(*args, **kwargs)
    return run_sync(value) if inspect.isawaitable(value) else value


async def call_async(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Call a sync or async function from async code; sync ones run in a daemon thread of
    their own, which nothing joins: one that runs on after its caller gave up (a timed-out
    tool) cannot hold the process at exit, as a thread of asyncio's default pool would."""
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    ):
        return await fn(*args, **kwargs)
    value = await _in_daemon_thread(functools.partial(fn, *args, **kwargs))
    return await value if inspect.isawaitable(value) else value


async def _in_daemon_thread(call: Callable[[], T]) -> T:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def run() -> None:
        try:
            result = context.run(call)
        except BaseException as exc:  # the caller gets it, as asyncio.to_thread's would
            _hand_over(loop, future, future.set_exception, exc)
        else:
            _hand_over(loop, future, future.set_result, result)

    threading.Thread(target=run, name="toolwire-call", daemon=True).start()
    return await future


def _hand_over(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    settle: Callable[[Any], None],
    outcome: Any,
) -> None:
    """From the thread: give the outcome to the caller, if it still waits."""

    def settle_if_waited() -> None:
        if not future.done():
            settle(outcome)

    # A closed loop has nobody left waiting.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(settle_if_waited)
