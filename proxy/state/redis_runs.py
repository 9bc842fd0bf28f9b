"""Background runs in Redis, shared by the replicas.

Per run: a hash with its status (`run:{id}`), a lease key its replica renews
(`run-lease:{id}`), and a Redis stream of its events (`run-log:{id}`), each event under the
entry id `0-{sequence + 1}`, so a reader resumes after any sequence number with one XREAD.
The log's last entry carries `e`: the run ended. Every step that reads and changes a run is
one Lua script: a run ends once, and a run ended elsewhere takes no more events. The status
and the log live as long as the responses (`state.response_ttl_s`); the final response is
written into the response store's key by the same script that ends the run.

Readers wait for events with a blocking XREAD on a client of their own, so a follower never
holds one of the shared pool's connections.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from redis import asyncio as aioredis

from .base import StoredResponse, encode
from .redis import RedisState, reaching
from .runs import RunEvent, RunState, Tail

__all__ = ["RedisRunStore"]

log = logging.getLogger("toolwire.state")

_FOLLOWERS = 256
"""Readers waiting at once per process, each on a connection of the followers' pool."""
_MAX_WAIT_MS = 1000
"""A blocking read's longest wait: well inside the connection's 2-second read timeout."""
_BATCH = 512

# KEYS: status, lease, log, response. ARGV: the TTL (ms), the lease (ms), the response, then
# (sequence, type, JSON) of each first event.
_OPEN = """
redis.call('HSET', KEYS[1], 'status', 'queued')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
for i = 4, #ARGV, 3 do
  redis.call('XADD', KEYS[3], '0-' .. (tonumber(ARGV[i]) + 1),
             's', ARGV[i], 'k', ARGV[i + 1], 'd', ARGV[i + 2])
end
redis.call('PEXPIRE', KEYS[3], ARGV[1])
redis.call('SET', KEYS[4], ARGV[3], 'PX', ARGV[1])
return 1
"""

_STATE = """
return {redis.call('HGET', KEYS[1], 'status'), redis.call('EXISTS', KEYS[2])}
"""

_START = """
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'queued' then redis.call('HSET', KEYS[1], 'status', 'in_progress') return 1 end
if status == 'in_progress' then return 1 end
return 0
"""

# KEYS: status, lease of each run in turn. ARGV: the lease (ms).
_BEAT = """
local running = {}
for i = 1, #KEYS, 2 do
  local status = redis.call('HGET', KEYS[i], 'status')
  if status == 'queued' or status == 'in_progress' then
    redis.call('SET', KEYS[i + 1], '1', 'PX', ARGV[1])
    running[#running + 1] = 1
  else
    running[#running + 1] = 0
  end
end
return running
"""

# KEYS: status, log. ARGV: (sequence, type, JSON) of each event.
_APPEND = """
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'queued' and status ~= 'in_progress' then return 0 end
for i = 1, #ARGV, 3 do
  redis.call('XADD', KEYS[2], '0-' .. (tonumber(ARGV[i]) + 1),
             's', ARGV[i], 'k', ARGV[i + 1], 'd', ARGV[i + 2])
end
return 1
"""

# KEYS: status, lease, response, log. ARGV: the status, the response, the TTL (ms), orphaned
# only ('1'), the tail's type (empty: none), its JSON before and after its number, then
# (sequence, type, JSON) of each closing event.
_FINISH = """
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'queued' and status ~= 'in_progress' then return 0 end
if ARGV[4] == '1' and redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
local count = (#ARGV - 7) / 3
for i = 0, count - 1 do
  local at = 8 + i * 3
  local fields = {'s', ARGV[at], 'k', ARGV[at + 1], 'd', ARGV[at + 2]}
  if i == count - 1 and ARGV[5] == '' then
    fields[#fields + 1] = 'e'
    fields[#fields + 1] = '1'
  end
  redis.call('XADD', KEYS[4], '0-' .. (tonumber(ARGV[at]) + 1), unpack(fields))
end
if ARGV[5] ~= '' then
  local next = 0
  local last = redis.call('XREVRANGE', KEYS[4], '+', '-', 'COUNT', 1)
  if #last > 0 then
    local fields = last[1][2]
    for j = 1, #fields, 2 do
      if fields[j] == 's' then next = tonumber(fields[j + 1]) + 1 end
    end
  end
  redis.call('XADD', KEYS[4], '0-' .. (next + 1),
             's', next, 'k', ARGV[5], 'd', ARGV[6] .. next .. ARGV[7], 'e', '1')
elseif count == 0 then
  redis.call('XADD', KEYS[4], '*', 'e', '1')
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[4], ARGV[3])
return 1
"""


class RedisRunStore:
    """A RunStore in Redis (see the module's docstring for its keys)."""

    def __init__(self, state: RedisState, *, ttl_s: float) -> None:
        self._state = state
        self._ttl_ms = max(1, int(ttl_s * 1000))
        self._open = state.script(_OPEN)
        self._start = state.script(_START)
        self._state_of = state.script(_STATE)
        self._beat = state.script(_BEAT)
        self._append = state.script(_APPEND)
        self._finish = state.script(_FINISH)
        pool = state.client.connection_pool
        self._followers = aioredis.Redis.from_pool(
            aioredis.BlockingConnectionPool(
                connection_class=pool.connection_class,
                max_connections=_FOLLOWERS,
                timeout=2.0,
                **pool.connection_kwargs,
            )
        )

    def _keys(self, response_id: str) -> tuple[str, str, str]:
        key = self._state.key
        return key("run", response_id), key("run-lease", response_id), key("run-log", response_id)

    async def open(
        self, response_id: str, stored: StoredResponse, events: Sequence[RunEvent], lease_s: float
    ) -> None:
        """Record the queued run (one script). Raises StateUnavailableError."""
        status, lease, events_key = self._keys(response_id)
        response = self._state.key("response", response_id)
        args: list[Any] = [self._ttl_ms, max(1, int(lease_s * 1000)), self._encoded(stored)]
        args += [part for event in events for part in (event.sequence, event.kind, event.data)]
        with reaching("starting a background response"):
            await self._open(keys=[status, lease, events_key, response], args=args)

    async def start(self, response_id: str) -> bool:
        """Raises StateUnavailableError."""
        with reaching("starting a background response"):
            return bool(await self._start(keys=[self._keys(response_id)[0]]))

    async def beat(self, response_ids: Sequence[str], lease_s: float) -> list[bool]:
        """Raises StateUnavailableError."""
        if not response_ids:
            return []
        keys = [key for rid in response_ids for key in self._keys(rid)[:2]]
        with reaching("renewing the leases of background responses"):
            running = await self._beat(keys=keys, args=[max(1, int(lease_s * 1000))])
        return [bool(alive) for alive in running]

    async def append(self, response_id: str, events: Sequence[RunEvent]) -> None:
        """Raises StateUnavailableError."""
        if not events:
            return
        status, _, events_key = self._keys(response_id)
        args = [part for event in events for part in (event.sequence, event.kind, event.data)]
        with reaching("keeping the events of a background response"):
            await self._append(keys=[status, events_key], args=args)

    async def finish(
        self,
        response_id: str,
        status: str,
        stored: StoredResponse,
        events: Sequence[RunEvent] = (),
        *,
        tail: Tail | None = None,
        orphaned_only: bool = False,
    ) -> bool:
        """Raises StateUnavailableError."""
        status_key, lease, events_key = self._keys(response_id)
        response = self._state.key("response", response_id)
        args: list[Any] = [status, self._encoded(stored), self._ttl_ms, int(orphaned_only)]
        args += [tail.kind, tail.before, tail.after] if tail is not None else ["", "", ""]
        args += [part for event in events for part in (event.sequence, event.kind, event.data)]
        with reaching("ending a background response"):
            ended = await self._finish(keys=[status_key, lease, response, events_key], args=args)
        return bool(ended)

    async def state(self, response_id: str) -> RunState | None:
        """Raises StateUnavailableError."""
        status_key, lease, _ = self._keys(response_id)
        with reaching("reading a background response"):
            status, held = await self._state_of(keys=[status_key, lease])
        if not status:
            return None
        status = status.decode() if isinstance(status, bytes) else str(status)
        return RunState(status, bool(held) or status not in ("queued", "in_progress"))

    def cursor_after(self, sequence: int | None) -> str:
        return _entry(-1 if sequence is None else sequence)

    async def read(
        self, response_id: str, cursor: str, wait_s: float
    ) -> tuple[list[RunEvent], str, bool]:
        """Raises StateUnavailableError."""
        events_key = self._keys(response_id)[2]
        client = self._state.client
        with reaching("reading the events of a background response"):
            entries = _entries(await client.xread({events_key: cursor}, count=_BATCH))
            if not entries:
                last = _entries([[events_key, await client.xrevrange(events_key, count=1)]])
                if not last:
                    return [], cursor, True  # gone
                if _position(last[0][0]) > _position(cursor):
                    # Added since the read above: read again, never conclude from the tail.
                    entries = _entries(await client.xread({events_key: cursor}, count=_BATCH))
                elif b"e" in last[0][1]:
                    return [], cursor, True  # read to its end
                else:
                    block = max(1, min(_MAX_WAIT_MS, int(wait_s * 1000)))
                    follower = self._followers
                    entries = _entries(await follower.xread({events_key: cursor}, _BATCH, block))
        events = [_event(fields) for _, fields in entries if b"k" in fields]
        if entries:
            cursor = entries[-1][0].decode()
        return events, cursor, bool(entries) and b"e" in entries[-1][1]

    async def forget(self, response_id: str) -> None:
        """Raises StateUnavailableError."""
        with reaching("deleting a background response"):
            await self._state.client.delete(*self._keys(response_id))

    async def aclose(self) -> None:
        """Close the followers' connections."""
        await self._followers.aclose()

    def _encoded(self, stored: StoredResponse) -> bytes:
        data = encode(stored)
        if len(data) > self._state.max_entry_bytes:
            # Kept without its conversation: readable, not continuable.
            log.warning(
                "background response %s is %d bytes, over state.max_entry_bytes: kept without "
                "its conversation (previous_response_id cannot continue it)",
                stored.response.get("id"),
                len(data),
            )
            data = encode(StoredResponse(stored.response, [], stored.owner))
        return data


def _entry(sequence: int) -> str:
    return f"0-{sequence + 1}"


def _position(entry_id: bytes | str) -> tuple[int, int]:
    """A stream entry id (`ms-seq`) in the order Redis keeps them."""
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    ms, _, seq = text.partition("-")
    return int(ms), int(seq or 0)


def _entries(found: Any) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """The entries of one stream in an XREAD reply (RESP2: `[[key, entries]]`)."""
    return list(found[0][1]) if found else []


def _event(fields: dict[bytes, bytes]) -> RunEvent:
    return RunEvent(int(fields[b"s"]), fields[b"k"].decode(), fields[b"d"])
