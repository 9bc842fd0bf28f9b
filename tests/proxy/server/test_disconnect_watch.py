"""`DisconnectWatch` under a server that does not tell of cycle: it polls `receive`."""

from __future__ import annotations

import asyncio
from typing import Any

from proxy.server.asgi import WATCH_AFTER_S, DisconnectWatch, until_disconnect


async def test_without_the_servers_word_the_watch_reads_receive_after_a_while() -> None:
    left = asyncio.Event()
    reading = asyncio.Event()
    reads: list[float] = []

    async def receive() -> dict[str, Any]:
        reads.append(asyncio.get_running_loop().time())
        reading.set()
        await left.wait()
        return {"type": "http.disconnect"}

    async def turn() -> bool:
        watch = DisconnectWatch(receive, {"type": "http"})  # no CYCLE: a timer
        try:
            await asyncio.Future()
        except asyncio.CancelledError:
            return watch.departed()
        finally:
            pending = watch.stop()
            if pending is not None:
                await pending
        return False

    started = asyncio.get_running_loop().time()
    task = asyncio.ensure_future(turn())
    async with asyncio.timeout(5):
        await reading.wait()
        left.set()
        assert await task
    assert reads[0] - started >= WATCH_AFTER_S * 0.9


async def test_work_that_ends_first_is_not_cancelled() -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def work() -> None:
        await asyncio.sleep(0)

    assert await until_disconnect(receive, work()) is False
