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


class RedisPinStore:
    """Pins in Redis: one hash of records by tool name and a revision counter, changed
    together in one transaction."""

    def __init__(self, state: RedisState) -> None:
        self._state = state
        self._records = state.key("pins", "tools")
        self._revision = state.key("pins", "revision")

    async def revision(self) -> int:
        with reaching("reading the pins' revision"):
            value = await self._state.client.get(self._revision)
        return int(value or 0)

    async def load(self) -> tuple[int, dict[str, PinRecord]]:
        with reaching("reading the pinned tool definitions"):
            async with self._state.client.pipeline(transaction=True) as pipe:
                pipe.get(self._revision)
                pipe.hgetall(self._records)
                revision, raw = await pipe.execute()
        records = {}
        for data in raw.values():
            record = PinRecord.from_json(orjson.loads(data))
            records[record.name] = record
        return int(revision or 0), records

    async def first_sight(self, records: Iterable[PinRecord]) -> None:
        records = list(records)
        if not records:
            return
        with reaching("pinning tool definitions"):
            async with self._state.client.pipeline(transaction=True) as pipe:
                for record in records:
                    pipe.hsetnx(self._records, record.name, orjson.dumps(record.to_json()))
                pipe.incr(self._revision)
                await pipe.execute()

    async def put(self, record: PinRecord) -> None:
        with reaching("keeping a pinned tool definition"):
            async with self._state.client.pipeline(transaction=True) as pipe:
                pipe.hset(self._records, record.name, orjson.dumps(record.to_json()))
                pipe.incr(self._revision)
                await pipe.execute()

    async def replace_all(self, records: Iterable[PinRecord]) -> None:
        mapping = {record.name: orjson.dumps(record.to_json()) for record in records}
        with reaching("importing pinned tool definitions"):
            async with self._state.client.pipeline(transaction=True) as pipe:
                pipe.delete(self._records)
                if mapping:
                    pipe.hset(self._records, mapping=mapping)  # type: ignore[arg-type]
                pipe.incr(self._revision)
                await pipe.execute()
