"""CachedTool: a tool whose results are kept for a while, one execution per distinct call."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import orjson
from pydantic import BaseModel

from registry.calls import ToolOutput
from registry.errors import RegistryError
from registry.sync_bridge import call_async
from registry.tool import Tool

__all__ = ["CachedTool"]


class CachedTool:
    """Wraps a tool: equal arguments within `ttl_s` get the stored result.

    Concurrent identical misses share one execution (single-flight); failures, including
    results that report an error, are never stored. `tool` is the cached tool to register;
    it runs inline and calls a sync original in a thread.

    Raises:
        RegistryError: a non-positive ttl or entry count, or a tool without a function.
    """

    def __init__(
        self,
        tool: Tool,
        *,
        ttl_s: float = 60.0,
        max_entries: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl_s <= 0 or max_entries <= 0:
            raise RegistryError("ttl_s and max_entries must be positive")
        if tool.fn is None:
            raise RegistryError(f"tool {tool.qualified_name!r} has no function to cache")
        self._fn = tool.fn
        self._context = tool.context_parameter
        self._ttl_s = ttl_s
        self._max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[bytes, tuple[float, Any]] = OrderedDict()
        self._inflight: dict[bytes, asyncio.Future[Any]] = {}
        self.hits = 0
        self.misses = 0
        self.executions = 0
        self.tool = dataclasses.replace(
            tool,
            fn=self,
            is_async=True,
            metadata=dataclasses.replace(tool.metadata, execution_mode=None),
        )

    async def __call__(self, **arguments: Any) -> Any:
        """The stored result for these arguments, or a fresh one.

        Raises:
            Exception: whatever the original tool raised (not stored).
        """
        key = _key({k: v for k, v in arguments.items() if k != self._context})
        stored = self._entries.get(key)
        if stored is not None and stored[0] > self._clock():
            self._entries.move_to_end(key)
            self.hits += 1
            return stored[1]
        pending = self._inflight.get(key)
        if pending is not None:
            self.hits += 1
            # Shielded: a waiter that gives up does not cancel the shared execution.
            return await asyncio.shield(pending)
        self.misses += 1
        return await self._lead(key, arguments)

    def clear(self) -> None:
        """Forget every stored result."""
        self._entries.clear()

    async def _lead(self, key: bytes, arguments: dict[str, Any]) -> Any:
        shared: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._inflight[key] = shared
        try:
            self.executions += 1
            value = await call_async(self._fn, **arguments)
        except BaseException as exc:
            failure = exc
            if isinstance(exc, asyncio.CancelledError):
                failure = RegistryError("the identical call this one waited for was cancelled")
            shared.set_exception(failure)
            shared.exception()  # marks it retrieved: no waiter is a normal case
            raise
        finally:
            del self._inflight[key]
        shared.set_result(value)
        if not (isinstance(value, ToolOutput) and value.is_error):
            self._store(key, value)
        return value

    def _store(self, key: bytes, value: Any) -> None:
        self._entries[key] = (self._clock() + self._ttl_s, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)


def _key(arguments: dict[str, Any]) -> bytes:
    return orjson.dumps(
        arguments, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=_plain
    )


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return repr(value)
