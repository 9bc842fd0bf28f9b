"""Background responses (`background: true`): runs owned by the app, not by a request.

`BackgroundRuns` is built in the app's lifespan and closed at its end. It admits a run
(a 429 past `background.max_runs` on this replica, or `background.max_runs_per_key` for the
key), runs it as a task of its own, renews the leases of its runs in one heartbeat, and
stops a run that was cancelled on any replica. Any replica answers for any run: its status
(a run whose replica died, its lease expired, is reported `failed`), a cancel, and its
events after a sequence number, as they come.

Shutdown: a draining replica counts its runs as running work (the drain waits for them up
to `server.drain_s`); what still runs when the app stops is cancelled and ends `failed`
("the proxy shut down"), never left `in_progress`. A run cannot be resumed elsewhere: its
upstream call and tools were this replica's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import orjson

from ...config import BackgroundConfig
from ...errors import BadRequestError, ProxyError
from ...state.base import ResponseStore, StoredResponse
from ...state.cancels import end_if_cancelled
from ...state.runs import ACTIVE, RunEvent, RunStore, Tail
from ...turn.events import LoopEvent
from .background_run import Run, RunStoppedError

__all__ = ["BackgroundRuns", "TooManyRunsError", "Work"]

log = logging.getLogger("toolwire.background")

_WAIT_S = 1.0
"""A follower's longest wait for events before it looks at the run's lease."""
_CLOSE_S = 5.0
"""At shutdown, how long the cancelled runs have to record their end."""


class TooManyRunsError(ProxyError):
    """This replica runs as many background responses as it may (for the key, or in all)."""

    status = 429
    type = "requests"
    code = "rate_limit_exceeded"


class Work(Protocol):
    """Running work a drain waits for (the telemetry's `Drain`)."""

    def enter(self) -> None: ...

    def leave(self) -> None: ...


class BackgroundRuns:
    """The background runs of this replica, and every replica's as the run store shares them."""

    def __init__(
        self,
        store: RunStore,
        responses: ResponseStore,
        config: BackgroundConfig,
        work: Work | None = None,
    ) -> None:
        self._store = store
        self._responses = responses
        self._config = config
        self._work = work
        self._runs: dict[str, tuple[Run, asyncio.Task[None]]] = {}
        self._running = 0
        """Runs admitted, started or about to be."""
        self._per_key: Counter[str] = Counter()
        self._heart: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def store(self) -> RunStore:
        return self._store

    @property
    def beat_s(self) -> float:
        """How often the leases are renewed and cancels looked for."""
        return min(1.0, self._config.lease_s / 3)

    async def __aenter__(self) -> BackgroundRuns:
        self._heart = asyncio.get_running_loop().create_task(self._beat())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop every run (each ends `failed`), then the heartbeat."""
        self._closing = True
        stopping = RunStoppedError(
            "the proxy shut down before this background response finished; send it again"
        )
        tasks = []
        for run, task in self._runs.values():
            run.stopped = stopping
            task.cancel()
            tasks.append(task)
        if tasks:
            log.warning("shutting down: %d background response(s) end failed", len(tasks))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_CLOSE_S):
                    await asyncio.gather(*tasks, return_exceptions=True)
        if self._heart is not None:
            self._heart.cancel()
            await asyncio.gather(self._heart, return_exceptions=True)

    async def launch(self, run: Run, events: Callable[[], AsyncIterator[LoopEvent]]) -> None:
        """Admit `run`, record it queued, and start it.

        Raises:
            TooManyRunsError: this replica runs its most, in all or for the run's key.
            ProxyError: the proxy is shutting down.
            StateUnavailableError: the run store cannot be reached.
        """
        config = self._config
        if self._closing:
            raise ProxyError("the proxy is shutting down", status=503, code="shutting_down")
        if self._running >= config.max_runs:
            raise TooManyRunsError(
                f"this server runs {config.max_runs} background responses already "
                "(background.max_runs); retry when one has finished",
                headers={"retry-after": "1"},
            )
        # Without authentication there are no keys: only `max_runs` holds.
        if run.owner and self._per_key[run.owner] >= config.max_runs_per_key:
            raise TooManyRunsError(
                f"this key runs {config.max_runs_per_key} background responses already "
                "(background.max_runs_per_key); retry when one has finished",
                headers={"retry-after": "1"},
            )
        # Counted before the first await, so requests arriving together cannot pass the caps.
        self._count(run.owner, 1)
        try:
            stored, opening = run.opening()
            await self._store.open(run.id, stored, opening, config.lease_s)
        except BaseException:
            self._count(run.owner, -1)
            raise
        task = asyncio.get_running_loop().create_task(self._run(run, events))
        self._runs[run.id] = (run, task)
        if self._work is not None:
            self._work.enter()

    async def _run(self, run: Run, events: Callable[[], AsyncIterator[LoopEvent]]) -> None:
        try:
            await run.run(events(), self._config.max_run_s)
        finally:
            self._runs.pop(run.id, None)
            self._count(run.owner, -1)
            if self._work is not None:
                self._work.leave()  # last: a drain's last work may stop the server

    def _count(self, owner: str, change: int) -> None:
        self._running += change
        self._per_key[owner] += change
        if self._per_key[owner] <= 0:
            del self._per_key[owner]

    async def _beat(self) -> None:
        """Renew this replica's leases; stop the runs that ended elsewhere (cancelled)."""
        while True:
            end_if_cancelled()  # a cancellation a Redis call dropped ends the beat too
            await asyncio.sleep(self.beat_s)
            ids = list(self._runs)
            try:
                running = await self._store.beat(ids, self._config.lease_s)
            except ProxyError as exc:
                log.warning("background responses: leases not renewed: %s", exc)
                continue
            for response_id, alive in zip(ids, running, strict=True):
                if not alive:
                    self._stop(response_id)

    def _stop(self, response_id: str) -> None:
        """Stop a run of this replica that was ended elsewhere (its end is written)."""
        entry = self._runs.get(response_id)
        if entry is not None and entry[0].stopped is None:
            entry[0].stopped = "cancelled"
            entry[1].cancel()

    async def current(self, response_id: str, stored: StoredResponse) -> StoredResponse:
        """`stored` as it stands now: a running background response with its run's status;
        one whose replica died, `failed`.

        Raises:
            StateUnavailableError: the run store cannot be reached.
        """
        response = stored.response
        if not response.get("background") or response.get("status") not in ACTIVE:
            return stored
        state = await self._store.state(response_id)
        if state is None:
            # Its run's record is gone (evicted from Redis, say) while it was running:
            # nothing can end it any more, so it ends here.
            lost = _failed(stored, "the record of this background response's run was lost")
            await self._responses.put(response_id, lost)
            return lost
        if state.orphaned:
            await self._fail_orphan(response_id, stored)
        elif not state.ended:
            return StoredResponse({**response, "status": state.status}, [], stored.owner)
        return await self._responses.get(response_id) or stored

    async def cancel(self, response_id: str, stored: StoredResponse) -> dict[str, Any]:
        """Cancel a background response; the response object, `cancelled`. Cancelling a
        cancelled one returns it again.

        Raises:
            BadRequestError: not a background response, or one that ended otherwise.
            StateUnavailableError: the run store cannot be reached.
        """
        if not stored.response.get("background"):
            raise BadRequestError("Cannot cancel a synchronous response.")
        stored = await self.current(response_id, stored)
        if stored.response["status"] in ACTIVE:
            cancelled = StoredResponse(
                {**stored.response, "status": "cancelled"}, stored.conversation, stored.owner
            )
            if await self._store.finish(response_id, "cancelled", cancelled):
                self._stop(response_id)
            stored = await self._responses.get(response_id) or stored
            stored = await self.current(response_id, stored)
        status = stored.response["status"]
        if status != "cancelled":
            raise BadRequestError(f"Cannot cancel a {status} response.")
        return stored.response

    async def forget(self, response_id: str, stored: StoredResponse) -> None:
        """Before a background response is deleted: cancel its run, drop its log.

        Raises:
            StateUnavailableError: the run store cannot be reached.
        """
        if not stored.response.get("background"):
            return
        if stored.response.get("status") in ACTIVE:
            gone = StoredResponse({**stored.response, "status": "cancelled"}, [], stored.owner)
            if await self._store.finish(response_id, "cancelled", gone):
                self._stop(response_id)
        await self._store.forget(response_id)

    async def follow(self, response_id: str, after: int | None) -> AsyncIterator[RunEvent]:
        """The run's events after sequence number `after` (None: from its first), as they
        come, until its end; a run whose replica died ends with `response.failed`.

        Raises:
            StateUnavailableError: the run store cannot be reached.
        """
        store = self._store
        cursor = store.cursor_after(after)
        looked = 0.0  # when the lease was last looked at: at once on the first silence
        while True:
            end_if_cancelled()  # a cancellation a Redis read dropped ends the stream too
            events, cursor, ended = await store.read(response_id, cursor, _WAIT_S)
            for event in events:
                if after is None or event.sequence > after:
                    yield event
            if ended:
                return
            if events or time.monotonic() - looked < self._config.lease_s / 2:
                continue
            looked = time.monotonic()
            state = await store.state(response_id)
            if state is None:
                return
            if state.orphaned:
                stored = await self._responses.get(response_id)
                if stored is not None:
                    await self._fail_orphan(response_id, stored)

    async def _fail_orphan(self, response_id: str, stored: StoredResponse) -> None:
        """End a run whose replica died: `failed`, and the log's `response.failed` event."""
        record = _failed(
            stored,
            "the server running this background response stopped before it finished "
            "(its lease expired)",
        )
        tail = Tail(
            "response.failed",
            b'{"type":"response.failed","sequence_number":',
            b',"response":' + orjson.dumps(record.response) + b"}",
        )
        if await self._store.finish(response_id, "failed", record, tail=tail, orphaned_only=True):
            log.warning("background response %s: its server stopped; marked failed", response_id)


def _failed(stored: StoredResponse, why: str) -> StoredResponse:
    """`stored` ended `failed` by the proxy, `why` in its error."""
    error = {"code": "server_error", "message": f"{why}; send the request again"}
    failed = {**stored.response, "status": "failed", "error": error}
    return StoredResponse(failed, stored.conversation, stored.owner)
