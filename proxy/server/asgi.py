"""Raw ASGI sending: JSON bodies, event streams, and cancelling work on client disconnect."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson

from ..errors import (
    ClientDisconnectedError,
    PayloadTooLargeError,
    ProxyError,
    RequestTimeoutError,
)
from ..upstreams.expiry import Expiry

BODY_ARRIVED = "toolwire.body_arrived"
"""A scope key the server's protocol (`http_wire.py`) sets once the request's whole body has
arrived: `read_body` then arms no timer. Under any other server (or with `Expect:
100-continue`, whose body comes only once asked for) it is absent and the body is timed."""
CYCLE = "toolwire.cycle"
"""A scope key the server's protocol (`http_wire.py`) sets to the request's `Cycle`: a
`DisconnectWatch` is told by it when the client leaves, and needs no timer; `read_body`
takes a body that has all arrived from it, without `receive`, and has it time one still
coming. Under any other server it is
absent: the watch polls, the body is received."""
WATCH_AFTER_S = 0.05
"""How long a request runs before its client is watched for a disconnect (without
`CYCLE`)."""

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def send_json(
    send: Send, status: int, payload: Any, headers: dict[str, str] | None = None
) -> None:
    """Send a whole JSON response."""
    await send_json_bytes(send, status, orjson.dumps(payload), headers)


async def send_json_bytes(
    send: Send, status: int, body: bytes, headers: dict[str, str] | None = None
) -> None:
    """Send a whole response whose body is already serialised JSON."""
    raw_headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if headers:  # a loop, not a comprehension: no frame of its own for the one or two headers
        for name, value in headers.items():
            raw_headers.append((name.lower().encode(), value.encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


async def send_error(send: Send, error: ProxyError, request_id: str | None = None) -> None:
    """Send an OpenAI-shaped error response."""
    headers = dict(error.headers)
    if request_id:
        headers["x-request-id"] = request_id
    await send_json(send, error.status, error.body(), headers)


async def start_stream(send: Send, request_id: str) -> None:
    """Send the headers of an SSE response."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/event-stream; charset=utf-8"),
                (b"cache-control", b"no-cache"),
                (b"x-accel-buffering", b"no"),
                (b"x-request-id", request_id.encode()),
            ],
        }
    )


async def read_body(receive: Receive, scope: Scope, limits: BodyLimits) -> bytes:
    """The whole request body.

    Raises:
        PayloadTooLargeError: the body exceeds `limits.max_body_bytes`.
        RequestTimeoutError: the body did not arrive within `limits.body_timeout_s`.
        ClientDisconnectedError: the client left while sending.
    """
    cycle: Cycle | None = scope.get(CYCLE)
    if cycle is not None:
        body = cycle.whole_body()
        if body is not None:  # it all came with the head (most bodies): no wait, no timer
            if len(body) > limits.max_body_bytes:
                raise PayloadTooLargeError(
                    f"the request body exceeds {limits.max_body_bytes} bytes"
                )
            return body
    return await _received(receive, scope, limits, cycle)


async def _received(
    receive: Receive, scope: Scope, limits: BodyLimits, cycle: Cycle | None = None
) -> bytes:
    """The whole request body, as `receive` hands it over (`read_body`), in the request's
    task (the `cycle`'s, under the server's protocol)."""
    limit = limits.max_body_bytes
    declared = _content_length(scope)
    if declared is not None and declared > limit:
        raise PayloadTooLargeError(f"the request body exceeds {limit} bytes")
    parts: list[bytes] = []
    size = 0
    task: asyncio.Task[Any] | None = None
    timer: TimedRead | Expiry
    handle: TimedRead | asyncio.TimerHandle | None = None
    if not scope.get(BODY_ARRIVED):
        # A timer that cancels this task, as `asyncio.timeout` would, at a tenth of its cost.
        # The server's protocol says when the whole body is there (most bodies, by now):
        # reading it then cannot wait, and needs none. A body still coming (a client that
        # writes its head and its body apart, as http.client and httpx do) is timed by the
        # cycle, on its task and its connection's one timer: `current_task()` would be a
        # getpid system call on Python 3.11, and a timer cancelled per read one more poll.
        if cycle is not None:
            task = cycle.task
            cancelling = task.cancelling()
            timer = handle = cycle.time_body(limits.body_timeout_s)
        else:
            task = asyncio.current_task()
            assert task is not None
            cancelling = task.cancelling()
            timer = Expiry(task)
            # The task's loop: `get_running_loop()` would be a second getpid system call.
            handle = task.get_loop().call_later(limits.body_timeout_s, timer.expire)
    try:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientDisconnectedError("client disconnected")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise PayloadTooLargeError(f"the request body exceeds {limit} bytes")
            parts.append(chunk)
            if not message.get("more_body"):
                return b"".join(parts)
    except asyncio.CancelledError:
        # Ours only when no other cancellation is pending beside it (as `asyncio.timeout`).
        if task is not None and timer.expired and task.uncancel() <= cancelling:
            raise RequestTimeoutError(
                f"the request body did not arrive within {limits.body_timeout_s:g} s"
            ) from None
        raise
    finally:
        if handle is not None:
            handle.cancel()


class BodyLimits(Protocol):
    """How much a request body may hold and how long it may take to arrive."""

    @property
    def max_body_bytes(self) -> int: ...

    @property
    def body_timeout_s(self) -> float: ...


async def until_disconnect(
    receive: Receive, work: Awaitable[None], scope: Scope | None = None
) -> bool:
    """Run `work` in this task, cancelling it if the client disconnects (`DisconnectWatch`).

    Returns True when the work was cancelled so.
    """
    watch = DisconnectWatch(receive, scope)
    try:
        await work
    except asyncio.CancelledError:
        if not watch.departed():
            raise
        return True
    finally:
        pending = watch.stop()
        if pending is not None:
            await pending
    return False


class Cycle(Protocol):
    """What the server's protocol tells of a request (`CYCLE`): the task that serves it,
    whether its client has left, and whom to tell, once, when it does; its whole body."""

    task: asyncio.Task[None]
    disconnected: bool
    departed: Callable[[], None] | None

    def whole_body(self) -> bytes | None:
        """The request's body, taken as `receive` would hand it over, when all of it has
        arrived (and nothing else is owed first); else None, and `receive` reads it."""
        ...

    def time_body(self, timeout_s: float) -> TimedRead:
        """A read of the body still coming, timed from now: the task is cancelled (and the
        read `expired`) when `timeout_s` passes before the read is `cancel`led."""
        ...

    def answer(self, status: int, fields: bytes, body: bytes) -> Awaitable[None]:
        """The whole response at once, as the two ASGI messages of a body with its length
        would send it: `fields` are its header lines (`name: value` and CRLF each, names in
        lowercase, `content-length` among them), the caller's own and valid as made."""
        ...

    def open_stream(self, status: int, fields: bytes, body: bytes, more: bool) -> Awaitable[None]:
        """A response of unknown length begun, as its start and first body messages would
        begin it: its head (`fields` as `answer`'s, without a length: the body goes chunked)
        and `body`, in one write; `more=False` ends it there."""
        ...

    def chunk(self, body: bytes, more: bool) -> Awaitable[None]:
        """The next body of a response `open_stream` began, as its body message would send
        it; `more=False` ends the response."""
        ...


JSON_FIELDS = b"content-type: application/json\r\ncontent-length: %d\r\nx-request-id: %b\r\n"
"""A JSON answer's header lines (`%` its length and its request id), as `Cycle.answer` takes
them."""


async def send_fields(
    send: Send, status: int, fields: bytes, body: bytes, more: bool = False
) -> None:
    """A response begun as the ASGI messages of its start and first body: `fields` are its
    header lines (`Cycle.answer`'s: `name: value` and CRLF each); `more`: its body goes on.
    What a response written at once (`Cycle.answer`, `open_stream`) is where it cannot be."""
    headers = []
    for line in fields.split(b"\r\n")[:-1]:
        name, _, value = line.partition(b": ")
        headers.append((name, value))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    message: dict[str, Any] = {"type": "http.response.body", "body": body}
    if more:
        message["more_body"] = True
    await send(message)


class Replies(Protocol):
    """How a front's own responses go out with what the edge adds to them (the request id;
    on a turn, the overhead), written by the server's protocol at once when it can
    (`RequestContext.reply`: the edge's telemetry, `Served`)."""

    def answer(self, status: int, body: bytes) -> Awaitable[None]:
        """A JSON response, whole."""
        ...

    def open_stream(self, body: bytes, more: bool = True) -> Awaitable[None]:
        """An event stream (status 200) begun with its first frames; `more=False` ends it."""
        ...

    def chunk(self, body: bytes, more: bool = True) -> Awaitable[None]:
        """The stream's next frames; `more=False` ends it."""
        ...


class TimedRead(Protocol):
    """A body's read timed by the server (`Cycle.time_body`)."""

    expired: bool

    def cancel(self) -> None:
        """The read ended: no longer timed."""
        ...


class DisconnectWatch:
    """Watches the current task's client for a disconnect and cancels the task when it goes.

    With the request's `scope` from a server that tells of departures (`CYCLE`), the
    watcher starts when the client leaves, at once. Else it starts only once the work has
    run for `WATCH_AFTER_S`: most answers finish sooner, and a task per request is a
    measurable share of the proxy's CPU; a disconnect is still seen within 100 ms. Either
    way the watcher reads `receive` until it says the client has left (which the edge's
    telemetry notes), then cancels the task.

    Used in the request task's own frame (as `until_disconnect` does, or a front inline): a
    `CancelledError` there is the client's when `departed()` says so; `stop()` when the work
    ends, awaiting what it returns.
    """

    __slots__ = ("_cycle", "_receive", "_task", "_timer", "gone", "loop", "watcher")

    def __init__(self, receive: Receive, scope: Scope | None = None) -> None:
        self._receive = receive
        self.gone = False
        self.watcher: asyncio.Task[None] | None = None
        cycle: Cycle | None = scope.get(CYCLE) if scope is not None else None
        self._cycle = cycle
        self._timer: asyncio.TimerHandle | None = None
        if cycle is not None:
            # The server's task for the request, which runs this watch: no running-loop
            # lookup (a getpid system call on Python 3.11), and no timer.
            self._task = task = cycle.task
            self.loop = task.get_loop()
            """The event loop the request runs on."""
            if cycle.disconnected:
                self._start()
            else:
                cycle.departed = self._start
            return
        found = asyncio.current_task()
        assert found is not None
        self._task = found
        # The task's loop, not `get_running_loop()`: `current_task` above made one lookup.
        self.loop = found.get_loop()
        self._timer = self.loop.call_later(WATCH_AFTER_S, self._start)

    def departed(self) -> bool:
        """Whether the task's cancellation was the client's leaving (then taken back)."""
        if not self.gone:
            return False
        self._task.uncancel()
        return True

    def stop(self) -> Awaitable[Any] | None:
        """Stop watching; the watcher's end to await, if one was running."""
        if self._timer is not None:
            self._timer.cancel()
        else:
            cycle = self._cycle
            if cycle is not None:
                cycle.departed = None
        watcher = self.watcher
        if watcher is not None and not watcher.done():
            watcher.cancel()
            return asyncio.gather(watcher, return_exceptions=True)
        return None

    def _start(self) -> None:
        self.watcher = self.loop.create_task(self._watch())

    async def _watch(self) -> None:
        receive = self._receive
        while (await receive())["type"] != "http.disconnect":
            pass
        self.gone = True
        self._task.cancel()


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
