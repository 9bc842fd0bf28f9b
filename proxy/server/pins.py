"""Pinned tool definitions kept in force: each tool of a source with `pinning` is checked
against its pin as it is registered, held back when its definition drifted (`block`) or
flagged (`warn`), and released when an operator accepts; every replica follows the pins in
the state store (the README's **Pinned tool definitions**).

Nothing a source serves reaches a caller unchecked: the registry asks `PinKeeper.check` in
the same step as it registers a tool (a re-listed MCP server's changed tool is registered
anew). A definition first seen is pinned as served (trust on first use); on a source that
has pins and says `review_new_tools`, a new tool waits for acceptance instead. A definition
an operator rejected is never served, under either mode; the pinned one is not restored
either (the server no longer describes it, and what the tool does may have changed with its
description): the tool stays held until its server serves the pinned definition again or an
operator accepts what it serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Literal

from registry import Tool, ToolDefinition, ToolNotFoundError, ToolRegistry

from ..errors import StateUnavailableError
from ..state.cancels import end_if_cancelled
from ..state.pins import PinRecord, PinStore

log = logging.getLogger("toolwire.pins")

PinStatus = Literal["pinned", "changed", "new", "rejected"]

REFRESH_S = 1.0
"""How often a replica asks the store whether the pins changed (one GET)."""


class PinConflictError(Exception):
    """An operator's verdict does not apply: nothing awaits review, or the served
    definition is not the one the operator reviewed."""


@dataclass(frozen=True, slots=True)
class PinView:
    """One pinned tool as the admin shows it."""

    name: str
    source: str
    mode: str
    status: PinStatus
    held: bool
    """Neither injected nor run."""
    served: ToolDefinition
    digest: str
    """The served definition's digest."""
    pin: PinRecord | None

    @property
    def diff(self) -> str:
        """From the pinned definition to the served one ("" when they agree or none was)."""
        if self.pin is None or self.pin.definition is None or self.status == "pinned":
            return ""
        return ToolDefinition.from_json(self.pin.definition).diff(self.served)


class PinKeeper:
    """Checks tools against their pins, and applies operators' verdicts."""

    def __init__(
        self,
        registry: ToolRegistry,
        store: PinStore,
        *,
        refresh_s: float = REFRESH_S,
        pin_first_sight: bool = True,
    ) -> None:
        """`pin_first_sight=False` checks against the pins kept and adds none (`toolwire
        call`, a passing process, leaves pinning to the servers)."""
        self._registry = registry
        self._pin_first_sight = pin_first_sight
        self._store = store
        self._refresh_s = refresh_s
        self._pins: dict[str, PinRecord] = {}
        self._revision = -1
        self._unseen: dict[str, PinRecord] = {}
        """Definitions first seen here, not yet in the store."""
        self._told: dict[str, str] = {}
        """The digest of each tool's drift already logged."""
        self._wake = asyncio.Event()

    @contextlib.asynccontextmanager
    async def keeping(self) -> AsyncIterator[PinKeeper]:
        """Load the pins, check every tool registered from now on (and those already there),
        and follow the store until the block ends.

        Raises:
            StateUnavailableError: the store cannot be read at start-up.
        """
        self._revision, self._pins = await self._store.load()
        self._registry.check_holds(self.check)
        self._reevaluate()
        # Owned: cancelled and awaited when the block ends, whichever task ends it.
        task = asyncio.create_task(self._follow(), name="toolwire-pins")
        try:
            yield self
        finally:
            self._registry.check_holds(None)
            await _stopped(task)

    def check(self, tool: Tool) -> str | None:
        """Why `tool` is held back as it is registered, or None (also for sources that do
        not pin)."""
        if tool.metadata.pinning == "off":
            return None
        status, definition = self._status(tool)
        return self._hold(tool, status, definition)

    def views(self) -> list[PinView]:
        """Every registered tool whose source pins, in registration order."""
        views = []
        for tool in self._registry:
            if tool.metadata.pinning == "off":
                continue
            status, definition = self._status(tool)
            name = tool.qualified_name
            views.append(
                PinView(
                    name=name,
                    source=tool.metadata.source,
                    mode=tool.metadata.pinning,
                    status=status,
                    held=self._registry.held_reason(name) is not None,
                    served=definition,
                    digest=definition.digest,
                    pin=self._pins.get(name) or self._unseen.get(name),
                )
            )
        return views

    def view(self, name: str) -> PinView:
        """The pinned tool `name`.

        Raises:
            ToolNotFoundError: no registered tool of a pinning source has that name.
        """
        for view in self.views():
            if view.name == name:
                return view
        raise ToolNotFoundError(f"no pinned tool named {name!r}")

    async def accept(self, name: str, *, digest: str | None, by: str) -> PinView:
        """Pin the definition `name` serves (the one of `digest` when given), so that it is
        served from now on, on every replica.

        Raises:
            ToolNotFoundError: no such pinned tool.
            PinConflictError: nothing awaits review, or the served digest is not `digest`.
            StateUnavailableError: the store is lost.
        """
        view = self._reviewable(name, digest)
        base = view.pin or PinRecord(name, None, None, source=view.source)
        record = base.accepted(view.served.to_json(), view.digest, by)
        await self._keep(record)
        log.warning("pins: %s accepted the definition %s of %s", by, view.digest, name)
        return self.view(name)

    async def reject(self, name: str, *, digest: str | None, by: str) -> PinView:
        """Refuse the definition `name` serves: the tool stays held back, on every replica,
        until its server serves the pinned definition again or an operator accepts.

        Raises:
            ToolNotFoundError: no such pinned tool.
            PinConflictError: nothing awaits review, or the served digest is not `digest`.
            StateUnavailableError: the store is lost.
        """
        view = self._reviewable(name, digest)
        base = view.pin or PinRecord(name, None, None, source=view.source)
        await self._keep(base.refused(view.digest, by))
        log.warning("pins: %s rejected the definition %s of %s", by, view.digest, name)
        return self.view(name)

    async def export(self) -> list[PinRecord]:
        """Every record in the store, by name.

        Raises:
            StateUnavailableError: the store is lost.
        """
        _, records = await self._store.load()
        return [records[name] for name in sorted(records)]

    async def replace(self, records: Iterable[PinRecord]) -> None:
        """Keep exactly `records` (an imported state) and check every tool against them.

        Raises:
            StateUnavailableError: the store is lost.
        """
        await self._store.replace_all(records)
        await self.refresh(force=True)

    async def refresh(self, *, force: bool = False) -> None:
        """Write the definitions first seen, and load the pins if they changed.

        Raises:
            StateUnavailableError: the store is lost.
        """
        if self._unseen:
            unseen = list(self._unseen.values())
            await self._store.first_sight(unseen)
            for record in unseen:
                if self._unseen.get(record.name) is record:
                    del self._unseen[record.name]
        revision = await self._store.revision()
        if force or revision != self._revision:
            self._revision, self._pins = await self._store.load()
            self._reevaluate()

    def _reviewable(self, name: str, digest: str | None) -> PinView:
        view = self.view(name)
        if view.status == "pinned":
            raise PinConflictError(f"the tool {name!r} serves its pinned definition")
        if digest is not None and digest != view.digest:
            raise PinConflictError(
                f"the tool {name!r} serves the definition {view.digest}, not {digest}: "
                "review it again"
            )
        return view

    async def _keep(self, record: PinRecord) -> None:
        await self._store.put(record)
        self._pins[record.name] = record
        self._unseen.pop(record.name, None)
        self._reevaluate()

    def _status(self, tool: Tool) -> tuple[PinStatus, ToolDefinition]:
        definition = ToolDefinition.of(tool)
        digest = definition.digest
        name = tool.qualified_name
        pin = self._pins.get(name) or self._unseen.get(name)
        if pin is not None and pin.rejected == digest:
            return "rejected", definition
        if pin is not None and pin.digest == digest:
            return "pinned", definition
        if pin is not None:
            return ("changed" if pin.digest is not None else "new"), definition
        source = tool.metadata.source
        if tool.metadata.review_new and any(p.source == source for p in self._pins.values()):
            return "new", definition
        if self._pin_first_sight:
            self._unseen[name] = PinRecord(
                name, definition.to_json(), digest, source=source, pinned_at=time.time()
            )
            self._wake.set()
        return "pinned", definition

    def _hold(self, tool: Tool, status: PinStatus, definition: ToolDefinition) -> str | None:
        name = tool.qualified_name
        if status == "pinned":
            self._told.pop(name, None)
            return None
        if status == "rejected":
            return "an operator rejected the definition it serves"
        what = "is new" if status == "new" else "changed since it was pinned"
        warn = tool.metadata.pinning == "warn"
        if self._told.get(name) != definition.digest:
            self._told[name] = definition.digest
            log.warning(
                "pins: the definition of %s %s (%s); %s until an operator accepts or rejects it",
                name,
                what,
                definition.digest,
                "served, under pinning: warn," if warn else "held back",
            )
        return None if warn else f"its definition {what} and awaits an operator's review"

    def _reevaluate(self) -> None:
        for tool in list(self._registry):
            if tool.metadata.pinning == "off":
                continue
            status, definition = self._status(tool)
            self._registry.hold(tool.qualified_name, self._hold(tool, status, definition))

    async def _follow(self) -> None:
        """Write first sights and follow the store's revision until cancelled; a lost store
        is logged once, and its return once (the pins in memory hold meanwhile)."""
        lost = False
        while True:
            end_if_cancelled()
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns a wake that comes
            # with a cancellation and drops the cancellation (the app's stop then waits here).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._refresh_s):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self.refresh()
            except StateUnavailableError as exc:
                if not lost:
                    log.warning("pins: %s; the pins known here hold until it is back", exc)
                lost = True
            else:
                if lost:
                    log.warning("pins: the shared state is back; following it again")
                lost = False


async def _stopped(task: asyncio.Task[None]) -> None:
    """Cancel `task` and wait until it ends. Its own cancellation ends it quietly; the
    awaiting task's, requested before or meanwhile, is raised: asyncio passes it on to the
    awaited task, and it comes back as that task's CancelledError."""
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        waiter = asyncio.current_task()
        if waiter is not None and waiter.cancelling():
            raise
