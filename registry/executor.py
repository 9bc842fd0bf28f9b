"""The executor: validates a call's arguments, runs the tool, and reports the result."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType

from registry.backends import ExecutionBackend, InlineBackend, ThreadBackend
from registry.calls import ErrorKind, ToolCall, ToolOutput, ToolResult
from registry.errors import InvalidArgumentsError, RegistryError
from registry.output import render_output, truncate
from registry.tool import Tool

__all__ = ["Executor"]


class Executor:
    """Runs tool calls with validation, timeouts and per-tool serialization.

    Async tools run on the event loop, sync tools in a thread pool owned by the executor.
    A sync call that times out or is cancelled stops being awaited at once, but its thread
    cannot be killed and runs to completion in the background (for a tool that is not
    concurrency-safe, the next call may then start while it still runs).

    Raises:
        RegistryError: a non-positive timeout or worker count.
    """

    def __init__(self, *, default_timeout_s: float = 30.0, max_workers: int = 16) -> None:
        if default_timeout_s <= 0 or max_workers <= 0:
            raise RegistryError("default_timeout_s and max_workers must be positive")
        self._default_timeout_s = default_timeout_s
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="toolwire")
        self._inline = InlineBackend()
        self._threads = ThreadBackend(self._pool)
        # Per qualified name, so a tool that is not concurrency-safe runs one call at a time
        # across every request this executor serves.
        self._locks: dict[str, asyncio.Lock] = {}

    def backend_for(self, tool: Tool) -> ExecutionBackend:
        """The backend that runs `tool`: inline for async functions, threads for sync ones."""
        return self._inline if tool.is_async else self._threads

    async def execute(self, tool: Tool, call: ToolCall) -> ToolResult:
        """Run one call; failures come back as error results, never as exceptions.

        Raises:
            asyncio.CancelledError: the caller was cancelled; the call is abandoned.
        """
        try:
            arguments = tool.validate_arguments(call.arguments)
        except InvalidArgumentsError as exc:
            result = ToolResult.error(call.id, exc.kind, exc.message)
        else:
            if tool.metadata.is_concurrency_safe:
                result = await self._run(tool, call, arguments)
            else:
                async with self._lock(tool):
                    result = await self._run(tool, call, arguments)
        limit = tool.metadata.max_result_size
        if limit is not None and len(result.content) > limit:
            result = dataclasses.replace(result, content=truncate(result.content, limit))
        return result

    async def execute_many(self, items: Sequence[tuple[Tool, ToolCall]]) -> list[ToolResult]:
        """Run calls concurrently (unsafe tools one at a time); results in input order.

        Raises:
            asyncio.CancelledError: the caller was cancelled; every running call is cancelled.
        """
        results: list[ToolResult | None] = [None] * len(items)

        async def run_one(index: int, tool: Tool, call: ToolCall) -> None:
            results[index] = await self.execute(tool, call)

        async with asyncio.TaskGroup() as group:
            for index, (tool, call) in enumerate(items):
                group.create_task(run_one(index, tool, call))
        return [result for result in results if result is not None]

    def close(self) -> None:
        """Stop the thread pool without waiting; queued calls are dropped."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> Executor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    async def _run(self, tool: Tool, call: ToolCall, arguments: dict[str, object]) -> ToolResult:
        timeout_s = tool.metadata.timeout_s or self._default_timeout_s
        scope = asyncio.timeout(timeout_s)
        try:
            async with scope:
                value = await self.backend_for(tool).run(tool, arguments)
            if isinstance(value, ToolOutput):
                return _from_output(call.id, value)
            return ToolResult(call.id, render_output(value))
        except TimeoutError as exc:
            if scope.expired():
                message = f"the tool did not finish within {timeout_s:g} seconds"
                return ToolResult.error(call.id, ErrorKind.TIMEOUT, message)
            return ToolResult.error(call.id, ErrorKind.EXCEPTION, _describe(exc))
        except Exception as exc:
            # Whatever the tool raised is the model's to see, as data; the loop goes on.
            return ToolResult.error(call.id, ErrorKind.EXCEPTION, _describe(exc))

    def _lock(self, tool: Tool) -> asyncio.Lock:
        return self._locks.setdefault(tool.qualified_name, asyncio.Lock())


def _from_output(call_id: str, output: ToolOutput) -> ToolResult:
    if output.is_error:
        failed = ToolResult.error(call_id, ErrorKind.TOOL_ERROR, output.text)
        return dataclasses.replace(failed, attachments=output.attachments)
    return ToolResult(call_id, output.text, attachments=output.attachments)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
