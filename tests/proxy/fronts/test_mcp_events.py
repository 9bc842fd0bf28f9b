"""`/mcp`'s SSE event store: a stream's events after a given one are replayed in order
(priming events carry nothing and are skipped), other streams' are not, and the oldest
events go once the store is full."""

from __future__ import annotations

from mcp.server.streamable_http import EventMessage
from mcp_types.jsonrpc import JSONRPCMessage, JSONRPCNotification

from proxy.fronts.mcp.events import StreamEvents


def note(n: int) -> JSONRPCMessage:
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"n": n})


async def replayed(store: StreamEvents, after: str) -> tuple[str | None, list[int]]:
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    stream = await store.replay_events_after(after, send)
    numbers = [event.message.params["n"] for event in sent]  # type: ignore[union-attr,index]
    return stream, numbers


async def test_a_stream_resumes_after_the_last_event_it_got() -> None:
    store = StreamEvents()
    priming = await store.store_event("call-1", None)
    first = await store.store_event("call-1", note(1))
    await store.store_event("call-2", note(99))
    await store.store_event("call-1", note(2))
    await store.store_event("call-1", note(3))
    assert await replayed(store, priming) == ("call-1", [1, 2, 3])
    assert await replayed(store, first) == ("call-1", [2, 3])
    assert await replayed(store, "unknown") == (None, [])


async def test_the_oldest_events_go_when_the_store_is_full() -> None:
    store = StreamEvents(max_events=3)
    ids = [await store.store_event("s", note(n)) for n in range(5)]
    assert await replayed(store, ids[0]) == (None, [])
    assert await replayed(store, ids[2]) == ("s", [3, 4])
