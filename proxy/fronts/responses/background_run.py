"""One background response's run: its turn's events, folded by the response's builder, kept
in the run store's log under their sequence numbers, and its end written once.

The log is what every client of the run reads, on any replica: the stream of the request
that created it (`stream: true`), a stream resumed with `starting_after`, and the status
that `GET /v1/responses/{id}` reports. A background stream opens with `response.created`
and `response.queued` (status `queued`), then `response.in_progress`, then the events of a
streamed response.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson

from ...errors import ProxyError
from ...state.base import StoredResponse
from ...state.cancels import end_if_cancelled
from ...state.runs import RunEvent, RunStore
from ...turn.events import Finished, LoopEvent
from ...turn.record import Turn
from ..conversion import round_items
from ..renderers import Event
from .builder import ResponseBuilder

log = logging.getLogger("toolwire.background")


class RunStoppedError(ProxyError):
    """A background run stopped before its end by the proxy itself: the replica shut down,
    or the run passed its deadline."""

    code = "server_error"


class Run:
    """A background response from its first event to its end; `stopped` says why it was
    cancelled, when it was (`cancelled`: ended elsewhere; else the error to record)."""

    def __init__(
        self,
        builder: ResponseBuilder,
        turn: Turn,
        conversation: list[dict[str, Any]],
        store: RunStore,
    ) -> None:
        self.builder = builder
        self.turn = turn
        self.conversation = conversation
        self._store = store
        self._next = 0
        self._opening = builder.start()
        self.stopped: ProxyError | str | None = None
        self._log = _Log(store, builder.plan.id)
        self.queued: dict[str, Any] = {}
        """The response object as it was queued (what the create request answers)."""

    @property
    def id(self) -> str:
        return self.builder.plan.id

    @property
    def owner(self) -> str:
        return self.turn.owner

    def opening(self) -> tuple[StoredResponse, list[RunEvent]]:
        """The queued response and its first events (`response.created`, `.queued`)."""
        created = self._opening[0]
        created["response"]["status"] = "queued"
        queued = {"type": "response.queued", "response": created["response"]}
        self.queued = created["response"]
        stored = StoredResponse(self.queued, self.conversation, self.owner)
        return stored, self._numbered([created, queued])

    async def run(self, events: AsyncIterator[LoopEvent], deadline_s: float) -> None:
        """Follow the turn to its end and record it; a failure is the response's `failed`
        end, a cancel by the supervisor ends it as `stopped` says."""
        writer = asyncio.get_running_loop().create_task(self._log.write())
        try:
            await self._follow(events, deadline_s)
        finally:
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)

    async def _follow(self, events: AsyncIterator[LoopEvent], deadline_s: float) -> None:
        try:
            async with asyncio.timeout(deadline_s):
                if not await self._store.start(self.id):
                    return  # cancelled while queued
                self._log.add(self._numbered(self._opening[1:]))
                async for event in events:
                    if isinstance(event, Finished):
                        await self._finish(event)
                        return
                    self._log.add(self._numbered(self.builder.feed(event)))
            raise ProxyError("the turn ended without a result")
        except asyncio.CancelledError:
            if isinstance(self.stopped, ProxyError):
                await self._fail(self.stopped)
            # else: cancelled (or ended) elsewhere, which wrote its end
        except TimeoutError:
            await self._fail(
                RunStoppedError(f"the response ran past background.max_run_s ({deadline_s:g}s)")
            )
        except ProxyError as exc:
            await self._fail(exc)
        except Exception:
            log.exception("background response %s failed", self.id)
            await self._fail(ProxyError("internal error in the proxy"))

    async def _finish(self, done: Finished) -> None:
        builder = self.builder
        closing = builder.finish(done)
        hidden = [] if builder.plan.show_rounds else round_items(done.rounds)
        conversation = [*self.conversation, *hidden, *builder.output]
        stored = StoredResponse(builder.response(), conversation, self.owner)
        await self._log.flush()
        if await self._store.finish(self.id, builder.status, stored, self._numbered(closing)):
            log.info("background response %s ended %s", self.id, builder.status)

    async def _fail(self, exc: ProxyError) -> None:
        """End the run as `failed` with `exc`, unless it has ended already."""
        builder = self.builder
        if builder.status != "in_progress":
            return  # its end was folded already; storing it is what failed
        closing = builder.fail(exc)
        stored = StoredResponse(builder.response(), self.conversation, self.owner)
        try:
            await self._log.flush()
            if await self._store.finish(self.id, "failed", stored, self._numbered(closing)):
                log.warning("background response %s failed: %s", self.id, exc.message)
        except ProxyError as lost:
            # Its lease runs out, and any replica's reader then reports it failed.
            log.warning("background response %s: its failure was not recorded: %s", self.id, lost)

    def _numbered(self, events: Sequence[Event]) -> list[RunEvent]:
        """The events as the log keeps them, numbered in the run's own sequence (the
        builder's numbers do not count the `response.queued` the run adds)."""
        numbered = []
        for event in events:
            event["sequence_number"] = self._next
            numbered.append(RunEvent(self._next, event["type"], orjson.dumps(event)))
            self._next += 1
        return numbered


class _Log:
    """A run's events on their way to its log: each is written as it comes, and those that
    come while a write is under way go together in the next (one store call per batch, so
    a fast stream of text costs far fewer than one per event, and a slow one waits for
    none)."""

    def __init__(self, store: RunStore, response_id: str) -> None:
        self._store = store
        self._id = response_id
        self._pending: list[RunEvent] = []
        self._wake = asyncio.Event()
        self._written = asyncio.Event()
        self._written.set()
        self._error: ProxyError | None = None

    def add(self, events: list[RunEvent]) -> None:
        """Queue events for the log (in order).

        Raises:
            ProxyError: an earlier write failed (the store is unreachable).
        """
        if self._error is not None:
            raise self._error
        if events:
            self._pending += events
            self._written.clear()
            self._wake.set()

    async def write(self) -> None:
        """The writer, a task of the run: each batch in one call, in order, until a write
        fails (`add` and `flush` raise its error from then on)."""
        while True:
            # A cancellation a Redis write dropped ends it too: else it waits for the next
            # batch, and the run for it, for ever.
            end_if_cancelled()
            await self._wake.wait()
            self._wake.clear()
            batch, self._pending = self._pending, []
            try:
                await self._store.append(self._id, batch)
            except Exception as exc:
                if not isinstance(exc, ProxyError):
                    log.exception("background response %s: its events were not kept", self._id)
                    exc = ProxyError("internal error in the proxy")
                self._error = exc
                self._written.set()
                return
            if not self._pending:
                self._written.set()

    async def flush(self) -> None:
        """Until every queued event is written.

        Raises:
            ProxyError: a write failed.
        """
        await self._written.wait()
        if self._error is not None:
            raise self._error
