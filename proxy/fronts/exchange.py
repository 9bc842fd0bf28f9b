"""Serving one turn over HTTP, whatever the front: an event stream or one JSON body.

Each front brings its renderers (events to its wire format) and its error shape; this
module owns the sending: backpressure, batching, errors before and after the first byte.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from ..asgi import Send, send_json, start_stream
from ..context import RequestContext
from ..errors import ProxyError
from ..events import LoopEvent

log = logging.getLogger("toolwire")

_QUEUE_FRAMES = 256
"""Frames rendered ahead of the client; past this the turn waits (backpressure)."""

ErrorBody = Callable[[ProxyError], dict[str, Any]]
"""A front's error shape."""


class StreamRenderer(Protocol):
    """Renders a turn's events as the frames of one event stream."""

    def start(self) -> bytes:
        """The frames that open the stream."""
        ...

    def frames(self, event: LoopEvent) -> list[bytes]:
        """The frames for one event (possibly none)."""
        ...

    def error(self, exc: ProxyError) -> list[bytes]:
        """The frames that end a stream that failed after its first byte."""
        ...


class JsonRenderer(Protocol):
    """Folds a turn's events into one JSON body."""

    def feed(self, event: LoopEvent) -> None: ...

    def body(self) -> dict[str, Any]: ...


async def send_error(
    send: Send, exc: ProxyError, context: RequestContext, shape: ErrorBody
) -> None:
    """Send an error response in the front's shape."""
    headers = {**exc.headers, "x-request-id": context.request_id}
    await send_json(send, exc.status, shape(exc), headers)


def internal_error() -> ProxyError:
    return ProxyError("internal error in the proxy")


async def answer(
    events: AsyncIterator[LoopEvent],
    renderer: JsonRenderer,
    send: Send,
    context: RequestContext,
    shape: ErrorBody,
) -> None:
    """Send the turn as one JSON body."""
    try:
        async for event in events:
            renderer.feed(event)
        body = renderer.body()
    except ProxyError as exc:
        await send_error(send, exc, context, shape)
        return
    except Exception:
        log.exception("%s turn failed", context.request_id)
        await send_error(send, internal_error(), context, shape)
        return
    await send_json(send, 200, body, {"x-request-id": context.request_id})


async def stream(
    events: AsyncIterator[LoopEvent],
    renderer: StreamRenderer,
    send: Send,
    context: RequestContext,
    shape: ErrorBody,
) -> None:
    """Send the turn as SSE; the first item decides the HTTP status.

    A producer task renders events into a queue while this task sends: every frame ready
    when the sender wakes goes out in one write (an upstream read often holds several
    chunks), which halves the cost of streaming under load.
    """
    queue: asyncio.Queue[bytes | ProxyError | None] = asyncio.Queue(maxsize=_QUEUE_FRAMES)
    producer = asyncio.get_running_loop().create_task(_produce(events, renderer, queue, context))
    started = False
    try:
        while True:
            batch = [await queue.get()]
            while not queue.empty():
                batch.append(queue.get_nowait())
            frames = [item for item in batch if isinstance(item, bytes)]
            end = batch[-1] if not isinstance(batch[-1], bytes) else False
            if not started:
                if isinstance(end, ProxyError) and not frames:
                    await send_error(send, end, context, shape)
                    return
                await start_stream(send, context.request_id)
                frames.insert(0, renderer.start())
                started = True
            if isinstance(end, ProxyError):
                frames += renderer.error(end)
            body = b"".join(frames)
            await send({"type": "http.response.body", "body": body, "more_body": end is False})
            if end is not False:
                return
    finally:
        # After a complete stream the producer is done: awaiting it anyway would yield to
        # the disconnect watcher, which then reads the finished response as a departure.
        if not producer.done():
            producer.cancel()
            await asyncio.gather(producer, return_exceptions=True)


async def _produce(
    events: AsyncIterator[LoopEvent],
    renderer: StreamRenderer,
    queue: asyncio.Queue[bytes | ProxyError | None],
    context: RequestContext,
) -> None:
    """Render every event into the queue; end with None, or with the error that ended it."""
    try:
        async for event in events:
            for frame in renderer.frames(event):
                await queue.put(frame)
    except ProxyError as exc:
        await queue.put(exc)
    except Exception:
        log.exception("%s turn failed", context.request_id)
        await queue.put(internal_error())
    else:
        await queue.put(None)
