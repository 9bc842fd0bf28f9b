"""Every store in this process's memory: what a lone process uses, and what replicas fall
back to when Redis is unreachable and not required. Each is bounded (in entries, bytes or
both), so a busy process cannot grow without limit. The policies' in-memory approval store
and rate limiter are named here too.
"""

from __future__ import annotations

import time
from collections import OrderedDict

import orjson

from policies import MemoryApprovalStore, MemoryRateLimiter

from .base import MAX_OPEN, Message, OpenApproval, StoredResponse, decode, encode

__all__ = [
    "MemoryApprovalStore",
    "MemoryModeStore",
    "MemoryOpenApprovalStore",
    "MemoryRateLimiter",
    "MemoryResponseStore",
    "MemoryTurnStore",
]


class MemoryTurnStore:
    """A bounded, expiring in-process TurnStore: by entries, and by bytes (attachments such
    as images make a hidden turn large); the oldest entries go first."""

    def __init__(
        self,
        *,
        ttl_s: float = 3600.0,
        max_entries: int = 10_000,
        max_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        self._ttl = ttl_s
        self._max = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._entries: OrderedDict[str, tuple[float, int, list[Message]]] = OrderedDict()

    async def put(self, key: str, messages: list[Message]) -> None:
        size = len(orjson.dumps(messages))
        self._drop(key)
        if size > self._max_bytes:
            return
        self._entries[key] = (time.monotonic() + self._ttl, size, messages)
        self._bytes += size
        now = time.monotonic()
        while self._entries and (
            len(self._entries) > self._max
            or self._bytes > self._max_bytes
            or next(iter(self._entries.values()))[0] < now
        ):
            self._drop(next(iter(self._entries)))

    async def get(self, key: str) -> list[Message] | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] < time.monotonic():
            self._drop(key)
            return None
        return entry[2]

    async def get_many(self, keys: list[str]) -> list[list[Message] | None]:
        return [await self.get(key) for key in keys]

    async def add(self, key: str, messages: list[Message]) -> list[Message] | None:
        first = await self.get(key)  # no await in between: atomic within the event loop
        if first is None:
            await self.put(key, messages)
        return first

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry[1]


class MemoryResponseStore:
    """An in-process ResponseStore bounded by age and by total bytes (oldest go first).

    Entries are kept as JSON bytes (`encode`, as in Redis): the budget is what is held
    (Python objects would take several times their JSON size), and a large store adds
    nothing to garbage collection.
    """

    def __init__(self, *, ttl_s: float, max_bytes: int) -> None:
        self._ttl = ttl_s
        self._max_bytes = max_bytes
        self._bytes = 0
        self._entries: OrderedDict[str, tuple[float, int, bytes]] = OrderedDict()

    async def put(
        self, response_id: str, stored: StoredResponse, response_json: bytes | None = None
    ) -> None:
        data = encode(stored, response_json)
        size = len(data)
        if size > self._max_bytes:
            return  # larger than the whole store: keeping it would evict everything else
        self._drop(response_id)
        now = time.monotonic()  # one reading: no await between the entry and the evictions
        self._entries[response_id] = (now + self._ttl, size, data)
        self._bytes += size
        while self._entries and (
            self._bytes > self._max_bytes or next(iter(self._entries.values()))[0] < now
        ):
            self._drop(next(iter(self._entries)))

    async def get(self, response_id: str) -> StoredResponse | None:
        entry = self._entries.get(response_id)
        if entry is None:
            return None
        if entry[0] < time.monotonic():
            self._drop(response_id)
            return None
        return decode(entry[2])

    async def delete(self, response_id: str) -> bool:
        return self._drop(response_id)

    def _drop(self, response_id: str) -> bool:
        entry = self._entries.pop(response_id, None)
        if entry is None:
            return False
        self._bytes -= entry[1]
        return True


class MemoryOpenApprovalStore:
    """Open approvals in this process's memory, the newest `MAX_OPEN` of them."""

    def __init__(self) -> None:
        self._open: OrderedDict[str, OpenApproval] = OrderedDict()

    async def put(self, entry: OpenApproval) -> None:
        """List `entry`, dropping the oldest past `MAX_OPEN`."""
        self._open[entry.call_id] = entry
        while len(self._open) > MAX_OPEN:
            self._open.popitem(last=False)

    async def get(self, call_id: str) -> OpenApproval | None:
        """The entry of `call_id`, or None."""
        return self._open.get(call_id)

    async def all(self) -> list[OpenApproval]:
        """Every listed entry, oldest first."""
        return list(self._open.values())

    async def discard(self, call_ids: list[str]) -> None:
        """Stop listing these calls."""
        for call_id in call_ids:
            self._open.pop(call_id, None)


class MemoryModeStore:
    """A ModeStore in this process's memory, one per upstream."""

    def __init__(self) -> None:
        self._emulated: set[str] = set()

    async def is_emulated(self, model: str) -> bool:
        """Whether `model` was marked."""
        return model in self._emulated

    async def mark_emulated(self, model: str) -> None:
        """Mark `model`."""
        self._emulated.add(model)
