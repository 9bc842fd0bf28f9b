"""Execution backends: where a tool's function actually runs."""

from __future__ import annotations

import asyncio
import contextvars
import functools
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
    """Awaits async tools on the running event loop."""

    async def run(self, tool: Tool, arguments: dict[str, Any]) -> Any:
        """Await `tool.fn(**arguments)`.

        Raises:
            RegistryError: the tool has no local function.
        """
        return await _function(tool)(**arguments)


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
        call = functools.partial(contextvars.copy_context().run, _function(tool), **arguments)
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)


def _function(tool: Tool) -> Any:
    if tool.fn is None:
        raise RegistryError(f"tool {tool.qualified_name!r} has no local function to run")
    return tool.fn
