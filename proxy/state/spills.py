"""Spilled tool results: a result too long to show a model whole, kept for a while so that
the model reads it in parts (the README's "Long tool results: spilled, not cut").

Each result belongs to the key whose call produced it: under any other key its handle is
not found, exactly as an unknown or expired one. In memory the store is bounded in total
bytes, the least recently read result going first, and every entry expires; in Redis each
result is one string under a key that names its owner, with a TTL, so that a range is one
GETRANGE and any replica reads what another kept.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .redis import RedisState, reaching

__all__ = [
    "MemorySpillStore",
    "RedisSpillStore",
    "Slice",
    "SpillStore",
    "spill_store",
]

log = logging.getLogger("toolwire.state")


@dataclass(frozen=True, slots=True)
class Slice:
    """Part of a kept result: its bytes from `start`, and the whole result's size."""

    total: int
    start: int
    data: bytes


class SpillStore(Protocol):
    """Where spilled results are kept: in this process's memory, or shared in Redis."""

    async def put(self, owner: str, handle: str, data: bytes) -> bool:
        """Keep `data` as `owner`'s result `handle` until it expires; whether it was kept
        (a result larger than the store takes is not).

        Raises:
            StateUnavailableError: the shared store cannot be reached.
        """
        ...

    async def read(self, owner: str, handle: str, start: int, end: int) -> Slice | None:
        """Bytes `start` to `end` (clamped to the result) of `owner`'s result, or None:
        unknown, expired, evicted, or another key's.

        Raises:
            StateUnavailableError: the shared store cannot be reached.
        """
        ...

    async def whole(self, owner: str, handle: str) -> bytes | None:
        """All of `owner`'s result `handle`, or None (as `read`).

        Raises:
            StateUnavailableError: the shared store cannot be reached.
        """
        ...


class MemorySpillStore:
    """Spilled results in this process: at most `max_bytes` together (the least recently
    used go first), each kept `ttl_s` from when it was made."""

    def __init__(
        self, *, ttl_s: float, max_bytes: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ttl = ttl_s
        self._max_bytes = max_bytes
        self._clock = clock
        self._bytes = 0
        self._entries: OrderedDict[tuple[str, str], tuple[float, bytes]] = OrderedDict()

    @property
    def size(self) -> int:
        """The bytes held now."""
        return self._bytes

    async def put(self, owner: str, handle: str, data: bytes) -> bool:
        if len(data) > self._max_bytes:
            return False  # larger than the whole store: keeping it would evict everything else
        now = self._clock()
        self._expire(now)
        self._drop((owner, handle))
        self._entries[(owner, handle)] = (now + self._ttl, data)
        self._bytes += len(data)
        while self._bytes > self._max_bytes:
            self._drop(next(iter(self._entries)))
        return True

    async def read(self, owner: str, handle: str, start: int, end: int) -> Slice | None:
        data = self._get((owner, handle))
        if data is None:
            return None
        start = min(max(0, start), len(data))
        return Slice(len(data), start, data[start : max(start, end)])

    async def whole(self, owner: str, handle: str) -> bytes | None:
        return self._get((owner, handle))

    def _get(self, key: tuple[str, str]) -> bytes | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            self._drop(key)
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def _expire(self, now: float) -> None:
        """Drop every expired entry (use order is not age order, so all are looked at:
        spills are rare next to reads, and the store holds few thousand at most)."""
        for key in [key for key, (expires, _) in self._entries.items() if expires <= now]:
            self._drop(key)

    def _drop(self, key: tuple[str, str]) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= len(entry[1])


# A result's size and a range of it, in one round trip; GETRANGE's end is inclusive, and an
# empty range is asked for as an end before the start.
_READ = """
local total = redis.call('STRLEN', KEYS[1])
if total == 0 or tonumber(ARGV[2]) < tonumber(ARGV[1]) then
  return {total, ''}
end
return {total, redis.call('GETRANGE', KEYS[1], ARGV[1], ARGV[2])}
"""


class RedisSpillStore:
    """Spilled results in Redis, for every replica: each under a key naming its owner (a
    digest of the key's name), expiring `ttl_s` after it was made; a result over
    `state.max_entry_bytes` is not kept."""

    _KIND = "spill"

    def __init__(self, state: RedisState, *, ttl_s: float) -> None:
        self._state = state
        self._ttl_ms = max(1, int(ttl_s * 1000))
        self._read = state.script(_READ)

    async def put(self, owner: str, handle: str, data: bytes) -> bool:
        if not self._state.fits(data, self._KIND, handle):
            return False
        with reaching("keeping a long tool result"):
            await self._state.client.set(self._key(owner, handle), data, px=self._ttl_ms)
        return True

    async def read(self, owner: str, handle: str, start: int, end: int) -> Slice | None:
        start = max(0, start)
        with reaching("reading a kept tool result"):
            total, data = await self._read(keys=[self._key(owner, handle)], args=[start, end - 1])
        if not total:
            return None  # a missing key has length 0, and no empty result is ever spilled
        return Slice(int(total), min(start, int(total)), _bytes(data))

    async def whole(self, owner: str, handle: str) -> bytes | None:
        with reaching("reading a kept tool result"):
            data = await self._state.client.get(self._key(owner, handle))
        return None if data is None else _bytes(data)

    def _key(self, owner: str, handle: str) -> str:
        # A digest: key names may hold any character, and Redis keys list in plain sight.
        digest = hashlib.sha256(owner.encode()).hexdigest()[:16]
        return self._state.key(self._KIND, f"{digest}:{handle}")


def _bytes(value: bytes | str) -> bytes:
    """A reply's bytes (the client does not decode replies, but its types allow it)."""
    return value.encode() if isinstance(value, str) else value


def spill_store(*, ttl_s: float, max_memory_bytes: int, redis: RedisState | None) -> SpillStore:
    """The store of spilled results: Redis's when the state is shared, else this process's."""
    if redis is not None:
        return RedisSpillStore(redis, ttl_s=ttl_s)
    return MemorySpillStore(ttl_s=ttl_s, max_bytes=max_memory_bytes)
