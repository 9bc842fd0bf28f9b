"""A streamed turn goes no further than the write a client holds up: the turn waits at that
write until the client reads, then the stream goes on whole and in order. Keep-alive comments
fill a silence without reordering frames, and a client that leaves ends a keep-alive still
being written. The last upstream read's text goes out with the turn's end, in one write."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

from proxy.errors import ProxyError
from proxy.fronts.exchange import stream
from proxy.turn.events import ContentDelta, Finished, Usage
from testing.waiting import until

EVENTS = 50


class _Renderer:
    def start(self) -> bytes:
        return b"start\n"

    def frames(self, event: int) -> list[bytes]:
        return [b"%d\n" % event]

    def error(self, exc: ProxyError) -> list[bytes]:
        return [b"error\n"]


CONTEXT: Any = SimpleNamespace(request_id="req-1", reply=None)


async def test_a_client_that_does_not_read_holds_the_turn_back() -> None:
    produced: list[int] = []
    sent: list[bytes] = []
    gate = asyncio.Event()
    writing = asyncio.Event()

    async def events() -> AsyncIterator[int]:
        for n in range(EVENTS):
            produced.append(n)
            yield n

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            writing.set()
            await gate.wait()  # a client that reads nothing until let go
            sent.append(message["body"])

    task = asyncio.create_task(stream(events(), _Renderer(), send, CONTEXT, lambda e: {}))
    await asyncio.wait_for(writing.wait(), 10)
    for _ in range(20):
        await asyncio.sleep(0)
    assert produced == [0]  # the turn waits at the write the client holds up
    gate.set()
    await asyncio.wait_for(task, 10)
    body = b"".join(sent)
    assert body == b"start\n" + b"".join(b"%d\n" % n for n in range(EVENTS))


async def test_keep_alives_fill_a_silence_in_order() -> None:
    sent: list[bytes] = []
    resume = asyncio.Event()

    async def events() -> AsyncIterator[int]:
        yield 1
        await resume.wait()  # silent until the client saw two keep-alives
        yield 2

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message["body"])

    task = asyncio.create_task(
        stream(events(), _Renderer(), send, CONTEXT, lambda e: {}, keepalive_s=0.01)
    )
    await until(lambda: sent.count(b": keep-alive\n\n") >= 2)
    resume.set()
    await asyncio.wait_for(task, 10)
    body = b"".join(sent).replace(b": keep-alive\n\n", b"")
    assert body == b"start\n1\n2\n"
    assert sent[0] == b"start\n1\n"


async def test_a_silent_stream_opens_with_a_keep_alive_and_fails_in_it() -> None:
    messages: list[dict[str, Any]] = []

    async def events() -> AsyncIterator[int]:
        await until(lambda: len(messages) >= 2)  # the start, and the first keep-alive
        raise ProxyError("upstream gave up")
        yield 0  # pragma: no cover

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    await asyncio.wait_for(
        stream(events(), _Renderer(), send, CONTEXT, lambda e: {}, keepalive_s=0.01), 10
    )
    assert messages[0]["type"] == "http.response.start" and messages[0]["status"] == 200
    bodies = [m["body"] for m in messages[1:]]
    assert bodies[0] == b"start\n: keep-alive\n\n"
    assert bodies[-1] == b"error\n" and messages[-1]["more_body"] is False


async def test_a_departing_client_ends_a_keep_alive_being_written() -> None:
    blocked = asyncio.Event()
    ended: list[str] = []

    async def events() -> AsyncIterator[int]:
        await asyncio.Future()  # a turn that never speaks
        yield 0  # pragma: no cover

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            blocked.set()
            try:
                await asyncio.Future()  # a client that never reads
            except asyncio.CancelledError:
                ended.append("keep-alive")
                raise

    task = asyncio.create_task(
        stream(events(), _Renderer(), send, CONTEXT, lambda e: {}, keepalive_s=0.01)
    )
    await asyncio.wait_for(blocked.wait(), 10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert ended == ["keep-alive"]
    assert task.cancelled()


async def test_a_client_leaving_during_a_write_ends_the_turn_at_once() -> None:
    closed: list[str] = []
    writing = asyncio.Event()

    async def events() -> AsyncIterator[int]:
        try:
            yield 1
            yield 2  # pragma: no cover
        finally:
            closed.append("turn")  # where the turn's upstream call is closed

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            writing.set()
            await asyncio.Future()  # a client that never reads, then leaves

    turn = events()  # held here, so only the stream can close it
    task = asyncio.create_task(stream(turn, _Renderer(), send, CONTEXT, lambda e: {}))
    await asyncio.wait_for(writing.wait(), 10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert closed == ["turn"]


class _Texts:
    def start(self) -> bytes:
        return b"start\n"

    def frames(self, event: Any) -> list[bytes]:
        if isinstance(event, ContentDelta):
            return [event.content.encode() + b"\n"]
        return [b"end\n"]

    def error(self, exc: ProxyError) -> list[bytes]:
        return [b"error\n"]


async def test_text_from_the_read_that_ended_the_stream_goes_out_with_the_end() -> None:
    bodies: list[tuple[bytes, bool]] = []

    async def events() -> AsyncIterator[Any]:
        yield ContentDelta("Hello ")  # a read of its own: out at once
        yield ContentDelta("world.", ending=True)  # the last read's text: the end follows
        yield Finished("stop", Usage())

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            bodies.append((message["body"], message["more_body"]))

    await stream(events(), _Texts(), send, CONTEXT, lambda e: {})
    assert bodies == [(b"start\nHello \n", True), (b"world.\nend\n", False)]


async def test_held_text_is_not_lost_when_the_turn_fails_after_it() -> None:
    messages: list[dict[str, Any]] = []

    async def events() -> AsyncIterator[Any]:
        yield ContentDelta("Partial.", ending=True)
        raise ProxyError("the answer could not be read")

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    await stream(events(), _Texts(), send, CONTEXT, lambda e: {})
    assert messages[0]["status"] == 200
    assert [m["body"] for m in messages[1:]] == [b"start\nPartial.\nerror\n"]
