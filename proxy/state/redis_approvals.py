"""Approvals in Redis, shared by the replicas: the pending approvals (taken once, by one
replica) and the operators' queue of open ones, so every replica lists every replica's paused
calls. The queue is a hash of entries by call id and a sorted set of their expiries, which
keeps the hash bounded (expired and oldest-past-the-cap entries go when a call is added)."""

from __future__ import annotations

import time

import orjson

from .base import MAX_OPEN, OpenApproval, PendingApproval
from .redis import RedisState, reaching

_EXPIRED_KEPT_S = 3600.0
"""An expired approval stays an hour, so a late answer learns it came too late."""
_KEPT_MS = 3600_000
"""Both keys live an hour past the last expiry, then go by themselves."""


class RedisApprovalStore:
    """An ApprovalStore in Redis: taken with GETDEL, so one replica alone gets an approval."""

    _KIND = "approval"

    def __init__(self, state: RedisState) -> None:
        self._state = state

    async def put(self, approval: PendingApproval) -> None:
        """Keep `approval` until an hour past its expiry. Raises StateUnavailableError."""
        data = orjson.dumps(approval)
        if not self._state.fits(data, self._KIND, approval.call_id):
            return
        until_ms = int((approval.expires_at + _EXPIRED_KEPT_S) * 1000)
        with reaching("keeping an approval request"):
            await self._state.client.set(
                self._state.key(self._KIND, approval.call_id), data, pxat=until_ms
            )

    async def get(self, call_id: str) -> PendingApproval | None:
        """The approval for `call_id`, left in place. Raises StateUnavailableError."""
        with reaching("reading an approval"):
            data = await self._state.client.get(self._state.key(self._KIND, call_id))
        return _approval(data)

    async def take(self, call_id: str) -> PendingApproval | None:
        """Remove and return the approval, atomically. Raises StateUnavailableError."""
        with reaching("using an approval"):
            data = await self._state.client.getdel(self._state.key(self._KIND, call_id))
        return _approval(data)


def _approval(data: bytes | str | None) -> PendingApproval | None:
    # A record kept before approvals had owners loads as nobody's (owner ""): with
    # authentication on, no key's verdict matches it.
    return None if data is None else PendingApproval(**orjson.loads(data))


# KEYS: the hash, the sorted set. ARGV: call id, entry JSON, its expiry (ms), now (ms), the
# cap, how long past the last expiry the keys are kept (ms).
_PUT = """
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[4])
local over = redis.call('ZCARD', KEYS[2]) - #gone - tonumber(ARGV[5])
if over > 0 then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], #gone, #gone + over - 1)) do
    gone[#gone + 1] = id
  end
end
for _, id in ipairs(gone) do
  redis.call('HDEL', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
end
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
if #last == 0 then  -- the entry had expired already (a replica's clock ahead, say)
  redis.call('DEL', KEYS[1], KEYS[2])
  return #gone
end
local ttl = math.max(1, tonumber(last[2]) - tonumber(ARGV[4]) + tonumber(ARGV[6]))
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return #gone
"""


class RedisOpenApprovalStore:
    """An OpenApprovalStore in Redis, shared by the replicas."""

    def __init__(self, state: RedisState) -> None:
        self._state = state
        self._entries = state.key("approvals-open", "entries")
        self._expiries = state.key("approvals-open", "expiries")
        self._put = state.script(_PUT)

    async def put(self, entry: OpenApproval) -> None:
        """List `entry` (one script call). Raises StateUnavailableError."""
        data = orjson.dumps(entry)
        if not self._state.fits(data, "open approval", entry.call_id):
            return
        expires_ms = int(entry.expires_at * 1000)
        now_ms = int(time.time() * 1000)
        with reaching("listing an approval request for operators"):
            await self._put(
                keys=[self._entries, self._expiries],
                args=[entry.call_id, data, expires_ms, now_ms, MAX_OPEN, _KEPT_MS],
            )

    async def get(self, call_id: str) -> OpenApproval | None:
        """The entry of `call_id`, or None. Raises StateUnavailableError."""
        with reaching("reading an open approval"):
            data = await self._state.client.hget(self._entries, call_id)
        return None if data is None else _entry(data)

    async def all(self) -> list[OpenApproval]:
        """Every listed entry, oldest first. Raises StateUnavailableError."""
        with reaching("listing the open approvals"):
            found = await self._state.client.hvals(self._entries)
        return sorted((_entry(data) for data in found), key=lambda e: e.requested_at)

    async def discard(self, call_ids: list[str]) -> None:
        """Stop listing these calls. Raises StateUnavailableError."""
        if not call_ids:
            return
        with reaching("updating the open approvals"):
            await self._state.client.hdel(self._entries, *call_ids)
            await self._state.client.zrem(self._expiries, *call_ids)


def _entry(data: bytes | str) -> OpenApproval:
    fields = orjson.loads(data)
    fields.update(decided_by=None, approved=None)  # verdicts are read from the outcomes
    return OpenApproval(**fields)
