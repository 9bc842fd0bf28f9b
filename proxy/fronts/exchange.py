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
    JSON_FIELDS,
    DisconnectWatch,
    Receive,
    Replies,
    Scope,
    Send,
    read_body,
    send_fields,
    send_json,
    start_stream,
)
from ..server.context import RequestContext, context_of
from ..server.services import Services
from ..turn.events import ContentDelta, Finished
from .renderers import JsonRenderer, StreamRenderer

log = logging.getLogger("toolwire")

ErrorBody = Callable[[ProxyError], dict[str, Any]]
"""A front's error shape."""

E = TypeVar("E")


class Streamed(NamedTuple, Generic[E]):
    """A turn answered as an event stream."""

    events: AsyncIterator[E]
    renderer: StreamRenderer[E]


class Answered(NamedTuple, Generic[E]):
    """A turn answered as one JSON body."""

    events: AsyncIterator[E]
    renderer: JsonRenderer[E]


class Relay(NamedTuple, Generic[E]):
    """A turn answered as one JSON body that is most often made at once of the upstream's
    one answer (`ToolLoop.relay`: Chat sends its bytes as they are, Responses and Messages
    render theirs without an event): `answer` gives the body, or the turn's events, which the
    renderer `renderer(meta)` makes then folds (none is made for a body)."""

    answer: Awaitable[bytes | AsyncIterator[E]]
    renderer: Callable[[Any], JsonRenderer[E]]
    meta: Any


Reply = Streamed[Any] | Answered[Any] | Relay[Any]
"""A prepared turn's events and how they reach the client (named tuples: one per request,
built on the hot path)."""


class TurnFront:
    """A front that serves each request as one turn, as a raw ASGI app (so a disconnect
    cancels the work): its `_reply` reads the body into the turn's reply, `serve_reply`
    serves it, and an error comes in the front's shape (`error_body`)."""

    def __init__(self, services: Services, error_body: ErrorBody) -> None:
        self._services = services
        self._error_body = error_body

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        # serve_reply's coroutine, not awaited here: no frame of this one stays on the
        # request's task (see server/middleware.py).
        return serve_reply(scope, receive, send, self._services, self._reply, self._error_body)

    def _reply(self, raw: bytes, context: RequestContext) -> Reply | Awaitable[Reply]:
        """The request as its turn, and how the turn reaches the client: prepared at once
        (a plain function) or, when it must wait first, an awaitable of it.

        Raises:
            ProxyError: the request is not valid (an error response in the front's shape).
        """
        raise NotImplementedError


async def serve_reply(
    scope: Scope,
    receive: Receive,
    send: Send,
    services: Services,
    reply: Callable[[bytes, RequestContext], Reply | Awaitable[Reply]],
    error_body: ErrorBody,
) -> None:
    """Serve one turn: `reply` reads the request into its reply (what it raises is an error
    response in the front's shape), which is sent, cancelled if the client leaves. A reply
    prepared without a wait is given at once (a plain function: no coroutine to make and
    run); one that must wait first (a stored response to read, a run to launch) as an
    awaitable of it.

    One coroutine for the request's read and its answer, which a front returns from its own
    `__call__` (no frame of the front's stays on the request's task)."""
    context = context_of(scope)
    try:
        raw = await read_body(receive, scope, services.server)
        out = reply(raw, context)
        if not isinstance(out, tuple):  # not a reply (a named tuple): one to wait for
            out = await out
    except Exception as exc:
        await _refuse(exc, send, context, error_body)
        return
    # `until_disconnect` and `answer` spelled out: their frames would be two more on every
    # resumption of the task while the turn runs.
    watch = DisconnectWatch(receive, scope)
    try:
        if isinstance(out, Streamed):
            keepalive_s = services.keepalive_s
            await stream(
                out.events, out.renderer, send, context, error_body, keepalive_s, watch.loop
            )
            return
        try:
            events = out.events if isinstance(out, Answered) else await out.answer
            if isinstance(events, bytes):
                body = events
            else:
                renderer = out.renderer(out.meta) if isinstance(out, Relay) else out.renderer
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
        edge = context.reply
        if edge is not None:  # the edge's: the head made and written with the body at once
            await edge.answer(200, body)
        else:
            fields = JSON_FIELDS % (len(body), context.request_id.encode())
            await send_fields(send, 200, fields, body)
    except asyncio.CancelledError:
        if not watch.departed():
            raise
        log.info("%s client disconnected; turn cancelled", context.request_id)
    finally:
        pending = watch.stop()
        if pending is not None:
            await pending


async def _refuse(
    exc: Exception, send: Send, context: RequestContext, error_body: ErrorBody
) -> None:
    """Answer a request that could not be read or prepared (`exc`), in the front's shape;
    nothing when its client left."""
    if isinstance(exc, ClientDisconnectedError):
        return
    if not isinstance(exc, ProxyError):
        # The boundary: whatever slipped past validation is still an error in the front's shape.
        log.error("%s request could not be read", context.request_id, exc_info=exc)
        exc = internal_error()
    await send_error(send, exc, context, error_body)


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
    loop: asyncio.AbstractEventLoop | None = None,
) -> None:
    """Send the turn as SSE; the first frames decide the HTTP status, unless the turn stays
    silent for `keepalive_s`: then the stream starts with a keep-alive comment (and one
    follows every `keepalive_s` of silence), so a slow first token or a long pause keeps
    the connection open through proxies and load balancers; an error after that arrives
    in the stream. `loop`: the running event loop, when the caller has it (looking it up
    makes a system call on Python 3.11).

    One task: each event's frames are written as it comes, in this task, so a client that
    reads slowly holds the turn back at its write (backpressure) and no frame waits for a
    second task to wake; the turn's `Finished` is written with the response's end, and so is
    text from an upstream read that ended the upstream's stream (`ContentDelta.ending`):
    the last read's text, finish and usage go out in one write.
    """
    loop = loop if loop is not None else asyncio.get_running_loop()
    wire = _Wire(send, renderer, context.request_id, keepalive_s, loop, context.reply)
    try:
        try:
            async for event in events:
                if isinstance(event, Finished) or (
                    event.__class__ is ContentDelta and event.ending  # type: ignore[attr-defined]
                ):
                    # The turn's end, or text the turn's end follows at once: written with the
                    # response's end, in one write (where the edge notes the request's overhead).
                    wire.hold(renderer.frames(event))
                    continue
                frames = renderer.frames(event)
                if frames:
                    await wire.write(frames)
        except ProxyError as exc:
            failure = exc
        except Exception:
            log.exception("%s turn failed", context.request_id)
            failure = internal_error()
        except asyncio.CancelledError:
            # The client left, maybe while a frame was being written: the turn ends here, its
            # upstream call closed now rather than when its generator is collected.
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()
            raise
        else:
            await wire.write([], more=False)
            return
        if not wire.started and not wire.held:
            await send_error(send, failure, context, shape)
            return
        await wire.write(renderer.error(failure), more=False)
    finally:
        # A keep-alive still being written is ended (and awaited) only on a silent stream's
        # way out: on the usual one there is none, and nothing here yields.
        pending = wire.close()
        if pending is not None:
            await pending


class _Wire:
    """The stream's writer: the response's start before its first frames, then the frames as
    they come; a keep-alive comment after every `interval` of silence.

    The turn's task is busy elsewhere while the stream is silent (waiting on the upstream, or
    on a tool), so the ticker hands a keep-alive to a task of its own: one at a time, made
    only when a stream is silent, and awaited before the next write, so frames keep their
    order. One timer per stream, not per frame.
    """

    __slots__ = (
        "_handle",
        "_interval",
        "_loop",
        "_pending",
        "_renderer",
        "_reply",
        "_request_id",
        "_send",
        "active",
        "held",
        "started",
    )

    def __init__(
        self,
        send: Send,
        renderer: StreamRenderer[Any],
        request_id: str,
        interval: float,
        loop: asyncio.AbstractEventLoop,
        reply: Replies | None = None,
    ) -> None:
        self._send = send
        self._reply = reply
        """The edge's way to write the stream (without messages), if there is one."""
        self._renderer = renderer
        self._request_id = request_id
        self._interval = interval
        self._loop = loop
        self._handle: asyncio.TimerHandle | None = loop.call_later(interval, self._tick)
        self._pending: asyncio.Task[None] | None = None
        """A keep-alive being written."""
        self.active = False
        """Frames were written since the ticker last looked."""
        self.started = False
        """The response has started (or a keep-alive is starting it)."""
        self.held: list[bytes] = []
        """Frames that go out with the next write."""

    def hold(self, frames: list[bytes]) -> None:
        """Keep `frames` for the next write (which the turn makes without a wait)."""
        self.held += frames

    async def write(self, frames: list[bytes], *, more: bool = True) -> None:
        """Write the frames held and `frames` (after the response's start, the first time);
        `more=False` ends the response."""
        if self._pending is not None:
            await self._pending  # a keep-alive's frames go first
        self.active = True
        if self.held:
            frames, self.held = self.held + frames, []
        reply = self._reply
        if not self.started:
            self.started = True
            frames.insert(0, self._renderer.start())
            if reply is not None:  # the head written with the first frames
                await reply.open_stream(b"".join(frames), more)
                return
            await start_stream(self._send, self._request_id)
        if reply is not None:
            await reply.chunk(b"".join(frames), more)
            return
        await self._send(
            {"type": "http.response.body", "body": b"".join(frames), "more_body": more}
        )

    def close(self) -> Awaitable[Any] | None:
        """Stop the ticker; a keep-alive still being written, to await, if there is one."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        pending.cancel()
        return asyncio.gather(pending, return_exceptions=True)

    def _tick(self) -> None:
        if not self.active and self._pending is None:
            # Silent for a whole interval: the stream starts now if it had not (status 200).
            self._pending = self._loop.create_task(self._keep_alive(opens=not self.started))
            self.started = True
        self.active = False
        self._handle = self._loop.call_later(self._interval, self._tick)

    async def _keep_alive(self, *, opens: bool) -> None:
        try:
            body = sse.comment()
            reply = self._reply
            if opens:
                body = self._renderer.start() + body
                if reply is not None:
                    await reply.open_stream(body)
                    return
                await start_stream(self._send, self._request_id)
            if reply is not None:
                await reply.chunk(body)
                return
            await self._send({"type": "http.response.body", "body": body, "more_body": True})
        finally:
            self._pending = None
