"""Serving one turn over HTTP, whatever the front: an event stream or one JSON body.

Each front brings its request preparation, its renderers (events to its wire format) and
its error shape; this module owns the rest: reading the body, the errors before and after
the first byte, backpressure, batching, and the client's disconnect.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, NamedTuple, TypeVar

from .. import sse
from ..errors import ClientDisconnectedError, ProxyError
from ..server.asgi import (
    DisconnectWatch,
    Receive,
    Scope,
    Send,
    read_body,
    send_json,
    send_json_bytes,
    start_stream,
)
from ..server.context import RequestContext, context_of
from ..server.services import Services
from .renderers import JsonRenderer, StreamRenderer

log = logging.getLogger("toolwire")

_QUEUE_FRAMES = 256
"""Frames rendered ahead of the client; past this the turn waits (backpressure)."""

ErrorBody = Callable[[ProxyError], dict[str, Any]]
"""A front's error shape."""

E = TypeVar("E")
P = TypeVar("P")


class Streamed(NamedTuple, Generic[E]):
    """A turn answered as an event stream."""

    events: AsyncIterator[E]
    renderer: StreamRenderer[E]


class Answered(NamedTuple, Generic[E]):
    """A turn answered as one JSON body."""

    events: AsyncIterator[E]
    renderer: JsonRenderer[E]


class Relaying(NamedTuple, Generic[E]):
    """A turn answered as one JSON body, which may be the upstream's own (`ToolLoop.relay`):
    `answer` gives those bytes, or the turn's events for the renderer."""

    answer: Awaitable[bytes | AsyncIterator[E]]
    renderer: JsonRenderer[E]


Reply = Streamed[Any] | Answered[Any] | Relaying[Any]
"""A prepared turn's events and how they reach the client (named tuples: one per request,
built on the hot path)."""


async def serve_turn(
    scope: Scope,
    receive: Receive,
    send: Send,
    services: Services,
    prepare: Callable[[bytes, RequestContext], Awaitable[P]],
    reply: Callable[[P], Reply],
    error_body: ErrorBody,
) -> None:
    """Serve one turn: read and `prepare` the request (a failure is an error response in
    the front's shape), then send the `reply`, cancelled if the client leaves."""
    context = context_of(scope)
    out = await _read(scope, receive, send, services, prepare, reply, error_body)
    if out is None:
        return
    # `until_disconnect` and `answer` spelled out: their frames would be two more on every
    # resumption of the task while the turn runs.
    watch = DisconnectWatch(receive)
    try:
        if isinstance(out, Streamed):
            keepalive_s = services.keepalive_s
            await stream(out.events, out.renderer, send, context, error_body, keepalive_s)
            return
        renderer = out.renderer
        try:
            events = out.events if isinstance(out, Answered) else await out.answer
            if isinstance(events, bytes):
                body = events
            else:
                async for event in events:
                    renderer.feed(event)
                body = renderer.encoded()
        except ProxyError as exc:
            await send_error(send, exc, context, error_body)
            return
        except Exception:
            log.exception("%s turn failed", context.request_id)
            await send_error(send, internal_error(), context, error_body)
            return
        await send_json_bytes(send, 200, body, {"x-request-id": context.request_id})
    except asyncio.CancelledError:
        if not watch.departed():
            raise
        log.info("%s client disconnected; turn cancelled", context.request_id)
    finally:
        pending = watch.stop()
        if pending is not None:
            await pending


async def _read(
    scope: Scope,
    receive: Receive,
    send: Send,
    services: Services,
    prepare: Callable[[bytes, RequestContext], Awaitable[P]],
    reply: Callable[[P], Reply],
    error_body: ErrorBody,
) -> Reply | None:
    """The request read and prepared, as its reply; None when it was answered already (an
    error in the front's shape) or its client left."""
    context = context_of(scope)
    try:
        raw = await read_body(receive, scope, services.server)
        prepared = await prepare(raw, context)
    except ClientDisconnectedError:
        return None
    except ProxyError as exc:
        await send_error(send, exc, context, error_body)
        return None
    except Exception:
        # The boundary: whatever slipped past validation is still an error in the front's shape.
        log.exception("%s request could not be read", context.request_id)
        await send_error(send, internal_error(), context, error_body)
        return None
    return reply(prepared)


def openai_error_body(exc: ProxyError) -> dict[str, Any]:
    """OpenAI's error shape, which Chat Completions and Responses answer in."""
    return exc.body()


async def send_error(
    send: Send, exc: ProxyError, context: RequestContext, shape: ErrorBody
) -> None:
    """Send an error response in the front's shape."""
    headers = {**exc.headers, "x-request-id": context.request_id}
    await send_json(send, exc.status, shape(exc), headers)


def internal_error() -> ProxyError:
    return ProxyError("internal error in the proxy")


async def stream(
    events: AsyncIterator[E],
    renderer: StreamRenderer[E],
    send: Send,
    context: RequestContext,
    shape: ErrorBody,
    keepalive_s: float = 5.0,
) -> None:
    """Send the turn as SSE; the first item decides the HTTP status, unless the turn stays
    silent for `keepalive_s`: then the stream starts with a keep-alive comment (and one
    follows every `keepalive_s` of silence), so a slow first token or a long pause keeps
    the connection open through proxies and load balancers; an error after that arrives
    in the stream.

    A producer task renders events into an outbox while this task sends: every frame ready
    when the sender wakes goes out in one write (an upstream read often holds several
    chunks), so a burst costs one write, not one per frame.
    """
    outbox = _Outbox()
    loop = asyncio.get_running_loop()
    producer = loop.create_task(_produce(events, renderer, outbox, context))
    ticker = _Ticker(loop, outbox, keepalive_s)
    started = False
    try:
        while True:
            frames, end = await outbox.take()
            if not started:
                if isinstance(end, ProxyError) and not frames:
                    await send_error(send, end, context, shape)
                    return
                await start_stream(send, context.request_id)
                frames.insert(0, renderer.start())
                started = True
            if isinstance(end, ProxyError):
                frames += renderer.error(end)
            more = end is None
            await send({"type": "http.response.body", "body": b"".join(frames), "more_body": more})
            if not more:
                return
    finally:
        ticker.stop()
        # After a complete stream the producer is done: awaiting it anyway would yield to
        # the disconnect watcher, which then reads the finished response as a departure.
        if not producer.done():
            producer.cancel()
            await asyncio.gather(producer, return_exceptions=True)


class _Outbox:
    """Frames rendered ahead of the sender, taken all at once; the producer waits when the
    sender falls `_QUEUE_FRAMES` behind (backpressure).

    A list and two futures: an `asyncio.Queue` costs a put and a get per frame.
    """

    __slots__ = ("_end", "_frames", "_room", "_waiter", "active")

    def __init__(self) -> None:
        self.active = False
        """Frames came since the keep-alive ticker last looked."""
        self._frames: list[bytes] = []
        self._end: ProxyError | bool = False
        self._waiter: asyncio.Future[None] | None = None
        self._room: asyncio.Future[None] | None = None

    def put(self, frames: list[bytes]) -> asyncio.Future[None] | None:
        """Add the frames; when the sender is `_QUEUE_FRAMES` behind, a future the producer
        awaits until the sender takes them (a plain call otherwise: no coroutine per event)."""
        self._frames += frames
        self.active = True
        self._wake()
        if len(self._frames) >= _QUEUE_FRAMES:
            self._room = asyncio.get_running_loop().create_future()
            return self._room
        return None

    def close(self, end: ProxyError | None = None) -> None:
        """No more frames: the stream ends normally, or with `end`."""
        self._end = end if end is not None else True
        self._wake()

    async def take(self) -> tuple[list[bytes], ProxyError | bool | None]:
        """The frames ready, and how the stream ends (None: it goes on)."""
        while not self._frames and self._end is False:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        frames, self._frames = self._frames, []
        room, self._room = self._room, None
        if room is not None and not room.done():
            room.set_result(None)
        return frames, (None if self._end is False else self._end)

    def keep_alive(self) -> None:
        """A keep-alive comment, unless frames came since the last look or are waiting."""
        if not self.active and not self._frames and self._end is False:
            self._frames.append(sse.comment())
            self._wake()
        self.active = False

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class _Ticker:
    """Looks at the outbox every `interval` seconds: one timer per stream, not per frame."""

    __slots__ = ("_handle", "_interval", "_loop", "_outbox")

    def __init__(self, loop: asyncio.AbstractEventLoop, outbox: _Outbox, interval: float) -> None:
        self._loop, self._outbox, self._interval = loop, outbox, interval
        self._handle: asyncio.TimerHandle | None = loop.call_later(interval, self._tick)

    def _tick(self) -> None:
        self._outbox.keep_alive()
        self._handle = self._loop.call_later(self._interval, self._tick)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


async def _produce(
    events: AsyncIterator[E],
    renderer: StreamRenderer[E],
    outbox: _Outbox,
    context: RequestContext,
) -> None:
    """Render every event into the outbox, then close it (with the error that ended it)."""
    try:
        async for event in events:
            frames = renderer.frames(event)
            if frames:
                room = outbox.put(frames)
                if room is not None:
                    await room
    except ProxyError as exc:
        outbox.close(exc)
    except Exception:
        log.exception("%s turn failed", context.request_id)
        outbox.close(internal_error())
    else:
        outbox.close()
