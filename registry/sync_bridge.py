"""Calling async code from sync code and sync code from async code, loop or no loop."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
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
    """Call a sync or async function from async code; sync ones run in a thread."""
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    ):
        return await fn(*args, **kwargs)
    value = await asyncio.to_thread(functools.partial(fn, *args, **kwargs))
    return await value if inspect.isawaitable(value) else value
