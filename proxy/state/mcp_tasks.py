"""The task records of `/mcp`'s task-augmented tool calls, in memory or shared in Redis.

A record says how a detached call stands (working, then completed, failed or cancelled),
whose key started it, and its result once it has one. Any replica reads it (`tasks/get`,
`tasks/result` on another replica than the one running the call); the one running it
renews its lease while the call runs, and learns from the answer whether the call was
cancelled meanwhile. A record in a terminal status never changes again: every write goes
through `settle`, which replaces a record only while it is still open (one atomic step in
Redis), so a cancel and a completion racing each other leave exactly one of them.
"""

from __future__ import annotations

import dataclasses
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import orjson

from .redis import RedisState, reaching

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})

MAX_LISTED = 100
"""A key's tasks listed at most (the newest)."""


@dataclass(frozen=True, slots=True)
class McpTaskRecord:
    """One task: its state, its owner, and its outcome once it has one."""

    task_id: str
    owner: str
    """The name of the client key that started it; empty when authentication is off."""
    tool: str
    status: TaskStatus
    created_at: float
    """Wall-clock seconds (the protocol shows ISO 8601 times)."""
    updated_at: float
    ttl_s: float
    """How long the record is kept from its creation."""
    status_message: str | None = None
    result: dict[str, Any] | None = None
    """The call's `CallToolResult` as it goes on the wire, once completed."""
    error: dict[str, Any] | None = None
    """The JSON-RPC error (`code`, `message`) of a failed task."""
    lease_until: float = 0.0
    """Until when the replica running the call vouches for it (it renews the lease while
    the call runs); an open task past its lease was lost with its replica."""

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def expires_at(self) -> float:
        return self.created_at + self.ttl_s

    def replace(self, **changes: Any) -> McpTaskRecord:
        """A copy with `changes`, stamped as updated now."""
        return dataclasses.replace(self, updated_at=time.time(), **changes)


def encode_task(record: McpTaskRecord) -> bytes:
    return orjson.dumps(dataclasses.asdict(record))


def decode_task(data: bytes | str) -> McpTaskRecord:
    return McpTaskRecord(**orjson.loads(data))


class McpTaskStore(Protocol):
    """Where task records are kept until their TTL ends."""

    async def create(self, record: McpTaskRecord) -> None:
        """Keep a new record; readable by every replica once this returns."""
        ...

    async def get(self, task_id: str) -> McpTaskRecord | None:
        """The record of `task_id`, whoever owns it (the caller checks), or None once it
        expired or never was."""
        ...

    async def settle(self, record: McpTaskRecord) -> McpTaskRecord | None:
        """Replace the stored record by `record` while the stored one is still open; the
        record kept afterwards (the stored one when it was already terminal), or None
        when there is none."""
        ...

    async def owned(self, owner: str) -> list[McpTaskRecord]:
        """The records of `owner`'s tasks that are still kept, newest first (at most
        `MAX_LISTED`)."""
        ...


class MemoryMcpTaskStore:
    """Task records in this process's memory, the oldest dropped past `max_entries`."""

    def __init__(self, *, max_entries: int = 10_000) -> None:
        self._records: OrderedDict[str, McpTaskRecord] = OrderedDict()
        self._max_entries = max_entries

    async def create(self, record: McpTaskRecord) -> None:
        self._records[record.task_id] = record
        while len(self._records) > self._max_entries:
            self._records.popitem(last=False)

    async def get(self, task_id: str) -> McpTaskRecord | None:
        record = self._records.get(task_id)
        if record is not None and record.expires_at <= time.time():
            del self._records[task_id]
            return None
        return record

    async def settle(self, record: McpTaskRecord) -> McpTaskRecord | None:
        current = await self.get(record.task_id)
        if current is None or current.terminal:
            return current
        self._records[record.task_id] = record
        return record

    async def owned(self, owner: str) -> list[McpTaskRecord]:
        now = time.time()
        mine = [r for r in self._records.values() if r.owner == owner and r.expires_at > now]
        return mine[::-1][:MAX_LISTED]


# KEYS[1]: the record, KEYS[2]: its owner's index. ARGV: the record, its TTL (ms), its id,
# its creation time, how many ids the index keeps. The index lives as long as its newest.
_CREATE = """
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[5]) - 1)
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
"""

# KEYS[1]: the record. ARGV[1]: the new record. The stored record stays when it is gone or
# terminal; the kept one is returned either way (nil when gone).
_SETTLE = """
local current = redis.call('GET', KEYS[1])
if not current then return nil end
local status = cjson.decode(current)['status']
if status == 'completed' or status == 'failed' or status == 'cancelled' then
  return current
end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
return ARGV[1]
"""


class RedisMcpTaskStore:
    """Task records in Redis, shared by every replica: each record's JSON under its id,
    expiring with its TTL, and each key's task ids in a sorted set (by creation) for
    `tasks/list`."""

    _KIND = "mcp-task"
    _INDEX = "mcp-tasks-of"

    def __init__(self, state: RedisState) -> None:
        self._state = state
        self._create = state.script(_CREATE)
        self._settle = state.script(_SETTLE)

    async def create(self, record: McpTaskRecord) -> None:
        """Raises StateUnavailableError."""
        key = self._state.key(self._KIND, record.task_id)
        index = self._state.key(self._INDEX, record.owner)
        ttl_ms = max(1, int(record.ttl_s * 1000))
        args: list[bytes | str | int | float] = [
            encode_task(record),
            ttl_ms,
            record.task_id,
            record.created_at,
            MAX_LISTED * 2,
        ]
        with reaching("keeping an MCP task"):
            await self._create(keys=[key, index], args=args)

    async def get(self, task_id: str) -> McpTaskRecord | None:
        """Raises StateUnavailableError."""
        with reaching("reading an MCP task"):
            data = await self._state.client.get(self._state.key(self._KIND, task_id))
        return None if data is None else decode_task(data)

    async def settle(self, record: McpTaskRecord) -> McpTaskRecord | None:
        """A result over `state.max_entry_bytes` is not kept: the task fails saying so.
        Raises StateUnavailableError."""
        data = encode_task(record)
        if not self._state.fits(data, self._KIND, record.task_id):
            too_big = f"the result was {len(data)} bytes, over state.max_entry_bytes"
            error = {"code": -32603, "message": too_big}
            data = encode_task(record.replace(status="failed", result=None, error=error))
        key = self._state.key(self._KIND, record.task_id)
        with reaching("updating an MCP task"):
            kept = await self._settle(keys=[key], args=[data])
        return None if kept is None else decode_task(kept)

    async def owned(self, owner: str) -> list[McpTaskRecord]:
        """Raises StateUnavailableError."""
        index = self._state.key(self._INDEX, owner)
        with reaching("listing MCP tasks"):
            members = await self._state.client.zrevrange(index, 0, MAX_LISTED - 1)
            if not members:
                return []
            ids = [m.decode() if isinstance(m, bytes) else str(m) for m in members]
            found = await self._state.client.mget([self._state.key(self._KIND, i) for i in ids])
            gone = [i for i, data in zip(ids, found, strict=True) if data is None]
            if gone:
                await self._state.client.zrem(index, *gone)
        return [decode_task(data) for data in found if data is not None]
