"""Background runs in this process's memory: what a lone process uses.

Bounded by age (the responses' TTL) and by bytes (the events' total): past the budget the
oldest ended runs go first; a running run is never dropped.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from .base import ResponseStore, StoredResponse
from .runs import ACTIVE, RunEvent, RunState, Tail

__all__ = ["MemoryRunStore"]


@dataclass(slots=True)
class _Run:
    status: str
    lease_until: float
    expires_at: float
    events: list[RunEvent] = field(default_factory=list)
    size: int = 0
    closed: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, events: Sequence[RunEvent]) -> int:
        self.events.extend(events)
        added = sum(len(e.data) for e in events)
        self.size += added
        self.changed.set()
        return added


class MemoryRunStore:
    """A RunStore in memory; its final responses go to `responses` (the process's own)."""

    def __init__(self, responses: ResponseStore, *, ttl_s: float, max_bytes: int) -> None:
        self._responses = responses
        self._ttl = ttl_s
        self._max_bytes = max_bytes
        self._bytes = 0
        self._runs: OrderedDict[str, _Run] = OrderedDict()

    async def open(
        self, response_id: str, stored: StoredResponse, events: Sequence[RunEvent], lease_s: float
    ) -> None:
        self._evict()
        now = time.monotonic()
        run = _Run("queued", now + lease_s, now + self._ttl)
        self._runs[response_id] = run
        self._bytes += run.add(events)
        await self._responses.put(response_id, stored)

    async def start(self, response_id: str) -> bool:
        run = self._runs.get(response_id)
        if run is None or run.status not in ACTIVE:
            return False
        run.status = "in_progress"
        return True

    async def beat(self, response_ids: Sequence[str], lease_s: float) -> list[bool]:
        until = time.monotonic() + lease_s
        running = []
        for response_id in response_ids:
            run = self._runs.get(response_id)
            alive = run is not None and run.status in ACTIVE
            if run is not None and alive:
                run.lease_until = until
            running.append(alive)
        return running

    async def append(self, response_id: str, events: Sequence[RunEvent]) -> None:
        run = self._runs.get(response_id)
        if run is None or run.closed:
            return  # ended elsewhere: the run is told so by its next beat
        self._bytes += run.add(events)

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
        run = self._runs.get(response_id)
        if run is None or run.status not in ACTIVE:
            return False
        if orphaned_only and run.lease_until > time.monotonic():
            return False
        # Decided before the first await: within the event loop, no other finish interleaves.
        run.status = status
        closing = list(events)
        if tail is not None:
            closing.append(tail.event(run.events[-1].sequence + 1 if run.events else 0))
        self._bytes += run.add(closing)
        run.closed = True
        await self._responses.put(response_id, stored)
        return True

    async def state(self, response_id: str) -> RunState | None:
        run = self._live(response_id)
        if run is None:
            return None
        alive = run.status not in ACTIVE or run.lease_until > time.monotonic()
        return RunState(run.status, alive)

    def cursor_after(self, sequence: int | None) -> str:
        return "-1" if sequence is None else str(sequence)

    async def read(
        self, response_id: str, cursor: str, wait_s: float
    ) -> tuple[list[RunEvent], str, bool]:
        after = int(cursor)
        run = self._live(response_id)
        if run is None:
            return [], cursor, True
        found = self._past(run, after)
        if not found and not run.closed:
            run.changed.clear()
            try:
                async with asyncio.timeout(wait_s):
                    await run.changed.wait()
            except TimeoutError:
                pass
            found = self._past(run, after)
        if found:
            cursor = str(found[-1].sequence)
        ended = run.closed and (not run.events or run.events[-1].sequence <= int(cursor))
        return found, cursor, ended

    async def forget(self, response_id: str) -> None:
        run = self._runs.pop(response_id, None)
        if run is not None:
            self._bytes -= run.size
            run.changed.set()

    async def aclose(self) -> None:
        """Nothing to release."""

    @staticmethod
    def _past(run: _Run, after: int) -> list[RunEvent]:
        events = run.events
        start = len(events)
        while start > 0 and events[start - 1].sequence > after:
            start -= 1
        return events[start:]

    def _live(self, response_id: str) -> _Run | None:
        run = self._runs.get(response_id)
        if run is not None and run.expires_at < time.monotonic() and run.status not in ACTIVE:
            self._bytes -= run.size
            del self._runs[response_id]
            return None
        return run

    def _evict(self) -> None:
        """Drop expired ended runs, and the oldest ended ones past the byte budget."""
        now = time.monotonic()
        for response_id, run in list(self._runs.items()):
            if run.status in ACTIVE:
                continue
            if run.expires_at >= now and self._bytes <= self._max_bytes:
                break
            self._bytes -= run.size
            del self._runs[response_id]
