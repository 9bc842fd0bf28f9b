"""Execution backends: where a tool's function actually runs."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from concurrent.futures import Executor as PoolExecutor
from typing import Any, Protocol

from registry.errors import RegistryError
from registry.tool import Tool

__all__ = ["ExecutionBackend", "InlineBackend", "ThreadBackend"]


class ExecutionBackend(Protocol):
    """Runs a tool's function with already-validated keyword arguments."""

    async def run(self, tool: Tool, arguments: dict[str, Any]) -> Any:
        """Run the tool and return its raw result; the tool's exceptions propagate."""
        ...


class InlineBackend:
    """Runs tools on the event loop: async tools are awaited, sync tools called directly.

    A sync tool run inline blocks the loop while it runs; that suits only tools that return
    at once (inline mode for a sync tool is an explicit choice, never the default).
    """

    async def run(self, tool: Tool, arguments: dict[str, Any]) -> Any:
        """Await `tool.fn(**arguments)`, or call it when it is sync.

        Raises:
            RegistryError: the tool has no local function.
        """
        value = _function(tool)(**arguments)
        return await value if inspect.isawaitable(value) else value


class ThreadBackend:
    """Runs sync tools in a thread pool so they never block the event loop.

    Cancelling the awaiting task returns at once, but a thread cannot be interrupted: a
    function that is already running goes on until it returns, and its result is dropped.
    """

    def __init__(self, pool: PoolExecutor) -> None:
        self._pool = pool

    async def run(self, tool: Tool, arguments: dict[str, Any]) -> Any:
        """Call `tool.fn(**arguments)` in the pool, with the caller's context variables.

        Raises:
            RegistryError: the tool has no local function.
        """
        fn = _function(tool)
        if tool.is_async:
            # An async tool asked for a thread (it blocks despite being async): it gets an
            # event loop of its own in the worker thread.
            fn = functools.partial(_run_coroutine, fn)
        call = functools.partial(contextvars.copy_context().run, fn, **arguments)
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)


def _run_coroutine(fn: Any, **arguments: Any) -> Any:
    async def wait() -> Any:
        return await fn(**arguments)

    return asyncio.run(wait())


def _function(tool: Tool) -> Any:
    if tool.fn is None:
        raise RegistryError(f"tool {tool.qualified_name!r} has no local function to run")
    return tool.fn
