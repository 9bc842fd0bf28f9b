"""A background run's events on their way to its log: written in order, those that come while
a write is under way together in the next, and a failed write is the run's error."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

import pytest

from proxy.errors import StateUnavailableError
from proxy.fronts.responses.background_run import _Log
from proxy.state.runs import RunEvent
from testing.waiting import cancelled_within


class SlowStore:
    """A run store whose appends wait until the test lets them through."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.entered = asyncio.Event()
        self.go = asyncio.Event()
        self.fail = False

    async def append(self, response_id: str, events: Sequence[RunEvent]) -> None:
        self.entered.set()
        await self.go.wait()
        if self.fail:
            raise StateUnavailableError("the shared state (Redis) is unavailable")
        self.batches.append([e.sequence for e in events])


def events(*numbers: int) -> list[RunEvent]:
    return [RunEvent(n, "response.output_text.delta", b"{}") for n in numbers]


async def test_events_that_come_during_a_write_go_together_in_the_next() -> None:
    store = SlowStore()
    log = _Log(store, "resp_1")  # type: ignore[arg-type]
    writer = asyncio.ensure_future(log.write())
    try:
        log.add(events(0))
        await store.entered.wait()  # the first write is under way
        log.add(events(1, 2))
        log.add(events(3))
        store.go.set()
        async with asyncio.timeout(5):
            await log.flush()
        assert store.batches == [[0], [1, 2, 3]]
    finally:
        writer.cancel()
        await asyncio.gather(writer, return_exceptions=True)


async def test_a_failed_write_is_raised_by_the_next_add_and_flush() -> None:
    store = SlowStore()
    store.fail = True
    log = _Log(store, "resp_1")  # type: ignore[arg-type]
    writer = asyncio.ensure_future(log.write())
    log.add(events(0))
    store.go.set()
    with pytest.raises(StateUnavailableError):
        async with asyncio.timeout(5):
            await log.flush()
    with pytest.raises(StateUnavailableError):
        log.add(events(1))
    await writer  # the writer stopped on its own


class DroppingStore:
    """A run store whose append drops a cancellation that comes during it, as redis-py's
    socket writes under Python 3.11's `asyncio.wait_for` can: the append then ends as if
    nothing came."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()

    async def append(self, response_id: str, events: Sequence[RunEvent]) -> None:
        self.entered.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()


async def test_the_writer_stops_when_the_store_drops_its_cancellation() -> None:
    # The run ends (stopped, cancelled elsewhere) while a write is under way, and the store's
    # client drops the cancellation: the writer still ends (it waited for a next batch that
    # never came, and the run, its replica's drain and stop with it).
    store = DroppingStore()
    log = _Log(store, "resp_1")  # type: ignore[arg-type]
    writer = asyncio.ensure_future(log.write())
    log.add(events(0))
    await store.entered.wait()
    await cancelled_within(writer, "the log's writer")
