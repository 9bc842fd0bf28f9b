"""Background runs of the Responses API, as every store keeps them: each run's status, the
lease its replica renews while it runs, and the log of its stream events.

A run is `queued`, then `in_progress`, then ends once: `completed`, `incomplete`, `failed`
or `cancelled`. Whoever ends it (the run itself, a cancel, or a reader that found its lease
expired because its replica died) does so with `RunStore.finish`, one atomic step that also
writes the final response object and closes the log; a second `finish` changes nothing. So
a run cancelled on one replica cannot be completed by another, and a run whose replica died
is `failed`, never `in_progress` for ever.

The log holds the run's stream events under their `sequence_number`s, so a client that lost
its stream resumes after the last one it saw, on any replica.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .base import ResponseStore, StoredResponse

if TYPE_CHECKING:
    from ..config import StateConfig
    from .redis import RedisState

__all__ = [
    "ACTIVE",
    "TERMINAL",
    "RunEvent",
    "RunState",
    "RunStore",
    "Tail",
    "run_store",
]

ACTIVE = frozenset({"queued", "in_progress"})
"""The statuses of a run that has not ended."""
TERMINAL = frozenset({"completed", "incomplete", "failed", "cancelled"})
"""The statuses a run ends in."""


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One stream event of a run: its sequence number, its type and its JSON."""

    sequence: int
    kind: str
    data: bytes
    """The event as sent, its `sequence_number` included."""


@dataclass(frozen=True, slots=True)
class Tail:
    """The event that closes the log of a run ended by someone else than the run (a reader
    that found its replica dead): its number is the log's next, so its JSON is given in two
    halves that surround the number (`{"type":…,"sequence_number":` and `,…}`)."""

    kind: str
    before: bytes
    after: bytes

    def event(self, sequence: int) -> RunEvent:
        return RunEvent(sequence, self.kind, self.before + str(sequence).encode() + self.after)


@dataclass(frozen=True, slots=True)
class RunState:
    """Where a run stands: its status, and whether its replica still holds its lease."""

    status: str
    alive: bool
    """The lease is held (always true of an ended run: nothing is left to lose)."""

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL

    @property
    def orphaned(self) -> bool:
        """Not ended, and no replica runs it any more."""
        return not self.ended and not self.alive


class RunStore(Protocol):
    """Where background runs are kept: in this process's memory, or shared in Redis.

    A cursor is a position in a run's log that only the store reads (`cursor_after`).
    """

    async def open(
        self, response_id: str, stored: StoredResponse, events: Sequence[RunEvent], lease_s: float
    ) -> None:
        """Record a `queued` run, its response as it starts, its first events, and a lease
        of `lease_s`. Raises StateUnavailableError."""
        ...

    async def start(self, response_id: str) -> bool:
        """Mark a queued run `in_progress`; False when it ended meanwhile (cancelled)."""
        ...

    async def beat(self, response_ids: Sequence[str], lease_s: float) -> list[bool]:
        """Renew the leases of runs this replica runs (one round trip); for each, whether
        it is still running (False: it was ended elsewhere, a cancel, so stop it)."""
        ...

    async def append(self, response_id: str, events: Sequence[RunEvent]) -> None:
        """Add events to a running run's log. Raises StateUnavailableError (also when the
        log was closed meanwhile: the run was ended elsewhere)."""
        ...

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
        """End a run, once: set `status`, release the lease, store `stored` as the response,
        add `events` (numbered by the run) or `tail` (numbered next) and close the log.

        With `orphaned_only`, only a run whose lease expired is ended. Whether this call
        ended it (False: it had ended already, or its replica still holds it).
        """
        ...

    async def state(self, response_id: str) -> RunState | None:
        """The run's status and lease; None for an unknown (or expired) run."""
        ...

    def cursor_after(self, sequence: int | None) -> str:
        """The cursor just past event `sequence` (None: the log's start)."""
        ...

    async def read(
        self, response_id: str, cursor: str, wait_s: float
    ) -> tuple[list[RunEvent], str, bool]:
        """The events past `cursor`, waiting up to `wait_s` for one when there are none;
        the cursor past them; and whether the log is closed and read to its end."""
        ...

    async def forget(self, response_id: str) -> None:
        """Drop the run and its log (the response was deleted)."""
        ...

    async def aclose(self) -> None:
        """Release what the store holds (connections)."""
        ...


def run_store(responses: ResponseStore, redis: RedisState | None, config: StateConfig) -> RunStore:
    """The run store beside the others: in Redis when they are (`redis`), else in memory,
    its final responses kept in `responses`."""
    from .memory_runs import MemoryRunStore
    from .redis_runs import RedisRunStore

    if redis is not None:
        return RedisRunStore(redis, ttl_s=config.response_ttl_s)
    return MemoryRunStore(responses, ttl_s=config.response_ttl_s, max_bytes=config.max_memory_bytes)
