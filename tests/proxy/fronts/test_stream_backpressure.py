"""A streamed turn renders at most a queue's worth of frames ahead of a client that does not
read: the producer waits until the sender takes them, then the stream goes on whole."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

from proxy.errors import ProxyError
from proxy.fronts import exchange
from proxy.fronts.exchange import stream
from testing.waiting import until

EVENTS = 3 * exchange._QUEUE_FRAMES


class _Renderer:
    def start(self) -> bytes:
        return b"start\n"

    def frames(self, event: int) -> list[bytes]:
        return [b"%d\n" % event]

    def error(self, exc: ProxyError) -> list[bytes]:
        return [b"error\n"]


async def test_a_client_that_does_not_read_holds_the_turn_back() -> None:
    produced: list[int] = []
    sent: list[bytes] = []
    gate = asyncio.Event()

    async def events() -> AsyncIterator[int]:
        for n in range(EVENTS):
            produced.append(n)
            yield n

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            await gate.wait()  # a client that reads nothing until let go
            sent.append(message["body"])

    context: Any = SimpleNamespace(request_id="req-1")
    task = asyncio.create_task(stream(events(), _Renderer(), send, context, lambda e: {}))
    # The first body write blocks; the producer fills the outbox and stops there.
    await until(lambda: len(produced) >= exchange._QUEUE_FRAMES)
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(produced) <= 2 * exchange._QUEUE_FRAMES
    assert len(produced) < EVENTS
    gate.set()
    await asyncio.wait_for(task, 10)
    body = b"".join(sent)
    assert body == b"start\n" + b"".join(b"%d\n" % n for n in range(EVENTS))
