"""Pinned tool definitions, in memory or shared by every replica in Redis.

One record per tool (by qualified name): the definition an operator trusts (pinned when the
tool was first seen, or accepted since) and the digest of a definition an operator rejected.
A revision counter moves on every change, so a replica learns with one read whether it must
load the pins again. Pins are kept until changed: they have no TTL.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from .redis import RedisState, reaching

FIRST_SIGHT = "first sight"
"""Who pinned a definition pinned when its tool was first seen."""


@dataclass(frozen=True, slots=True)
class PinRecord:
    """What is known of one tool's definition."""

    name: str
    definition: Mapping[str, Any] | None
    """The trusted definition (`ToolDefinition.to_json`), or None when none ever was (a new
    tool that waited for review and was rejected)."""
    digest: str | None
    source: str = ""
    """The label of the source that serves the tool."""
    pinned_by: str = FIRST_SIGHT
    pinned_at: float = 0.0
    rejected: str | None = None
    """The digest of a definition an operator rejected; it is never served."""
    rejected_by: str | None = None
    rejected_at: float | None = None

    def accepted(self, definition: Mapping[str, Any], digest: str, by: str) -> PinRecord:
        """This record with `definition` pinned by `by`, now (a rejection of it is lifted)."""
        rejected = None if self.rejected == digest else self.rejected
        return dataclasses.replace(
            self,
            definition=definition,
            digest=digest,
            pinned_by=by,
            pinned_at=time.time(),
            rejected=rejected,
            rejected_by=self.rejected_by if rejected else None,
            rejected_at=self.rejected_at if rejected else None,
        )

    def refused(self, digest: str, by: str) -> PinRecord:
        """This record with the definition of `digest` rejected by `by`, now."""
        return dataclasses.replace(self, rejected=digest, rejected_by=by, rejected_at=time.time())

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PinRecord:
        """Raises TypeError or KeyError for a shape that is not a record's."""
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in fields})


class PinStore(Protocol):
    """Where pins are kept; every method raises StateUnavailableError when Redis is lost."""

    async def revision(self) -> int:
        """A number that changes whenever any record does."""
        ...

    async def load(self) -> tuple[int, dict[str, PinRecord]]:
        """The revision and every record, read together."""
        ...

    async def first_sight(self, records: Iterable[PinRecord]) -> None:
        """Keep each record unless its tool already has one (another replica may have
        pinned it first: its pin wins)."""
        ...

    async def put(self, record: PinRecord) -> None:
        """Keep `record`, replacing its tool's."""
        ...

    async def replace_all(self, records: Iterable[PinRecord]) -> None:
        """Keep exactly `records` (an imported state)."""
        ...


class MemoryPinStore:
    """Pins in this process's memory."""

    def __init__(self) -> None:
        self._records: dict[str, PinRecord] = {}
        self._revision = 0

    async def revision(self) -> int:
        return self._revision

    async def load(self) -> tuple[int, dict[str, PinRecord]]:
        return self._revision, dict(self._records)

    async def first_sight(self, records: Iterable[PinRecord]) -> None:
        for record in records:
            if record.name not in self._records:
                self._records[record.name] = record
                self._revision += 1

    async def put(self, record: PinRecord) -> None:
        self._records[record.name] = record
        self._revision += 1

    async def replace_all(self, records: Iterable[PinRecord]) -> None:
        self._records = {record.name: record for record in records}
        self._revision += 1


_LOAD = """
return {redis.call('GET', KEYS[2]) or '0', redis.call('HGETALL', KEYS[1])}
"""
_FIRST_SIGHT = """
local kept = 0
for i = 1, #ARGV, 2 do
  kept = kept + redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1])
end
if kept > 0 then redis.call('INCR', KEYS[2]) end
return kept
"""
_PUT = """
if ARGV[1] == '1' then redis.call('DEL', KEYS[1]) end
for i = 2, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
return redis.call('INCR', KEYS[2])
"""


class RedisPinStore:
    """Pins in Redis: one hash of records by tool name and a revision counter, changed
    together by one script."""

    def __init__(self, state: RedisState) -> None:
        self._state = state
        self._keys = [state.key("pins", "tools"), state.key("pins", "revision")]
        self._load = state.script(_LOAD)
        self._first_sight = state.script(_FIRST_SIGHT)
        self._put = state.script(_PUT)

    async def revision(self) -> int:
        with reaching("reading the pins' revision"):
            value = await self._state.client.get(self._keys[1])
        return int(value or 0)

    async def load(self) -> tuple[int, dict[str, PinRecord]]:
        with reaching("reading the pinned tool definitions"):
            revision, flat = await self._load(keys=self._keys)
        records = {}
        for data in flat[1::2]:
            record = PinRecord.from_json(orjson.loads(data))
            records[record.name] = record
        return int(revision), records

    async def first_sight(self, records: Iterable[PinRecord]) -> None:
        args = _pairs(records)
        if args:
            with reaching("pinning tool definitions"):
                await self._first_sight(keys=self._keys, args=args)

    async def put(self, record: PinRecord) -> None:
        with reaching("keeping a pinned tool definition"):
            await self._put(keys=self._keys, args=["0", *_pairs([record])])

    async def replace_all(self, records: Iterable[PinRecord]) -> None:
        with reaching("importing pinned tool definitions"):
            await self._put(keys=self._keys, args=["1", *_pairs(records)])


def _pairs(records: Iterable[PinRecord]) -> list[str | bytes]:
    args: list[str | bytes] = []
    for record in records:
        args += [record.name, orjson.dumps(record.to_json())]
    return args
