"""A stream that follows a background run ends when its request does, even when the run
store's client drops the request's cancellation (redis-py under Python 3.11's
`asyncio.wait_for`)."""

from __future__ import annotations

import asyncio
import contextlib

from proxy.config import BackgroundConfig
from proxy.fronts.responses.background import BackgroundRuns
from proxy.state.memory import MemoryResponseStore
from proxy.state.runs import RunEvent, RunState
from testing.waiting import cancelled_within


class DroppingStore:
    """A run store with a run in progress whose first read drops a cancellation that comes
    during it, answering that nothing came; the next reads wait for the run's events."""

    def __init__(self) -> None:
        self.reading = asyncio.Event()

    def cursor_after(self, sequence: int | None) -> str:
        return "-1"

    async def read(
        self, response_id: str, cursor: str, wait_s: float
    ) -> tuple[list[RunEvent], str, bool]:
        if self.reading.is_set():
            await asyncio.Event().wait()
        self.reading.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()
        return [], cursor, False

    async def state(self, response_id: str) -> RunState | None:
        return RunState("in_progress", alive=True)


async def test_a_follower_stops_when_the_store_drops_its_cancellation() -> None:
    # The client goes away while its stream waits for the run's next events, and the store's
    # client drops the cancellation: the stream still ends (it went on following the run to
    # its end, and the replica's drain and stop waited for it).
    store = DroppingStore()
    responses = MemoryResponseStore(ttl_s=60, max_bytes=1 << 20)
    runs = BackgroundRuns(store, responses, BackgroundConfig())  # type: ignore[arg-type]

    async def stream() -> None:
        async for _ in runs.follow("resp_1", None):
            pass

    streaming = asyncio.ensure_future(stream())
    await store.reading.wait()
    await cancelled_within(streaming, "the follower")
