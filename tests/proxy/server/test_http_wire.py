"""The lean httptools protocol: uvicorn's behaviour on the wire (heads, bodies, streams,
keep-alive, HTTP/1.0, the proxy headers), fewer writes, and a guard that fails when uvicorn
changes what `http_wire.py` replaces."""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import inspect
import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from proxy.server import http_cycle
from proxy.server.asgi import BODY_ARRIVED, CYCLE, DisconnectWatch, read_body
from proxy.server.http_flow import Flow, Signal
from proxy.server.http_wire import LeanHttpTools

Message = dict[str, Any]
App = Callable[[Message, Any, Any], Awaitable[None]]

# What http_wire.py and http_cycle.py copy or replace from uvicorn (http_limits.py spells
# out on_message_begin), by a digest of its source: when uvicorn changes one, read the change
# against them, carry it over, then update the digest.
REPLACED = {
    HttpToolsProtocol.data_received: "010a7ae59a5d",
    HttpToolsProtocol.on_message_begin: "96d377fdc7c2",
    HttpToolsProtocol.on_body: "dba9c32aeba3",
    HttpToolsProtocol.on_headers_complete: "1ea8589acfad",
    HttpToolsProtocol._start_asgi_task: "9c08c2571ae9",
    HttpToolsProtocol.on_response_complete: "64e254f28e38",
    HttpToolsProtocol.on_message_complete: "1fbad42dc31f",
    RequestResponseCycle.__init__: "4d2f220910c3",
    RequestResponseCycle.send: "abdd8601b326",
    RequestResponseCycle.receive: "8124ae006be7",
    RequestResponseCycle.run_asgi: "0f33f2449a44",
    ProxyHeadersMiddleware.__init__: "7aa920bbc1fa",
    ProxyHeadersMiddleware.__call__: "b601df964c02",
}


def _digest(function: Any) -> str:
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:12]


def test_what_it_replaces_in_uvicorn_is_as_it_was() -> None:
    changed = [f.__qualname__ for f, digest in REPLACED.items() if _digest(f) != digest]
    assert not changed, f"uvicorn changed {changed}: carry the change over to http_wire.py"


class _Transport(asyncio.Transport):
    def __init__(self, peer: str = "127.0.0.1") -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self._peer = peer

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": (self._peer, 50000), "sockname": ("127.0.0.1", 8000)}.get(name)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class _Served:
    """One connection to `app` through the lean protocol, in memory."""

    def __init__(
        self,
        app: App,
        peer: str = "127.0.0.1",
        protocol: type[HttpToolsProtocol] = LeanHttpTools,
        **config: Any,
    ) -> None:
        self.scopes: list[Message] = []

        async def recording(scope: Message, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                self.scopes.append(scope)
            return await app(scope, receive, send)

        uvicorn_config = Config(recording, log_level="warning", **config)
        uvicorn_config.load()
        self.state = state = ServerState()
        state.default_headers = [(b"server", b"uvicorn")]  # as uvicorn's server sets them
        self.protocol = protocol(uvicorn_config, state, {})
        self.transport = _Transport(peer)
        self.protocol.connection_made(self.transport)

    async def request(self, raw: bytes) -> bytes:
        before = len(self.transport.writes)
        self.protocol.data_received(raw)
        for _ in range(20):  # the request's task runs to its end in a few steps
            await asyncio.sleep(0)
        return b"".join(self.transport.writes[before:])


async def _json(scope: Message, receive: Any, send: Any) -> None:
    body = b""
    while True:
        message = await receive()
        body += message["body"]
        if not message["more_body"]:
            break
    body = body or b"{}"
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _stream(scope: Message, receive: Any, send: Any) -> None:
    await receive()
    headers = [(b"content-type", b"text/event-stream")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
    await send({"type": "http.response.body", "body": b"data: 2\n\n", "more_body": False})


POST = b'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 7\r\n\r\n{"a":1}'


async def test_a_response_with_a_length_goes_out_in_one_write_and_the_connection_stays() -> None:
    served = _Served(_json)
    answer = await served.request(POST)
    assert len(served.transport.writes) == 1
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"\r\ncontent-length: 7" in head
    assert b"\r\nserver: uvicorn" in head
    assert b"connection: close" not in head and body == b'{"a":1}'
    assert not served.transport.closed and served.protocol.timeout_keep_alive_task is not None
    again = await served.request(POST)  # kept alive: the next request on it is answered
    assert again.endswith(b'{"a":1}') and len(served.transport.writes) == 2


async def test_a_stream_sends_its_head_at_once_then_chunks() -> None:
    served = _Served(_stream)
    answer = await served.request(POST)
    assert len(served.transport.writes) == 3
    head = served.transport.writes[0]
    assert head.endswith(b"transfer-encoding: chunked\r\n\r\n")
    assert answer.endswith(b"9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n0\r\n\r\n")


async def test_http_1_0_is_answered_then_closed() -> None:
    served = _Served(_json)
    answer = await served.request(POST.replace(b"HTTP/1.1", b"HTTP/1.0"))
    assert b"\r\nconnection: close\r\n" in answer and answer.endswith(b'{"a":1}')
    assert served.transport.closed
    assert served.scopes[0]["http_version"] == "1.0"


async def test_a_head_request_gets_the_head_only() -> None:
    served = _Served(_json)
    answer = await served.request(b"HEAD /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"\r\n\r\n")


@pytest.mark.parametrize(
    ("header", "problem"),
    [((b"x-bad name", b"v"), "name"), ((b"x-ok", b"v\r\nset-cookie: a=b"), "value")],
)
async def test_an_invalid_header_is_refused_as_uvicorn_refuses_it(
    header: tuple[bytes, bytes], problem: str
) -> None:
    raised: list[BaseException] = []

    async def app(scope: Message, receive: Any, send: Any) -> None:
        try:
            await send({"type": "http.response.start", "status": 200, "headers": [header]})
        except RuntimeError as exc:
            raised.append(exc)
            raise

    served = _Served(app)
    answer = await served.request(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
    assert [str(e) for e in raised] == [f"Invalid HTTP header {problem}."]
    assert answer == b"" and served.transport.closed


async def _headed_answers(
    protocol: type[HttpToolsProtocol], cases: list[list[tuple[bytes, bytes]]]
) -> list[tuple[list[str], bytes, bool]]:
    """For each list of response headers, what `protocol` makes of an app that starts its
    response with them: what the app's `send` raised, the answer, whether it closed."""
    served: list[tuple[list[str], bytes, bool]] = []
    for headers in cases:
        raised: list[str] = []

        async def app(
            scope: Message, receive: Any, send: Any, headers: Any = headers, raised: Any = raised
        ) -> None:
            try:
                await send({"type": "http.response.start", "status": 200, "headers": headers})
            except RuntimeError as exc:
                raised.append(str(exc))
                raise
            await send({"type": "http.response.body", "body": b""})

        connection = _Served(app, protocol=protocol)
        connection.protocol.logger.disabled = True  # the app's exception, logged each time
        try:
            answer = await connection.request(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        finally:
            connection.protocol.logger.disabled = False
        served.append((raised, answer, connection.transport.closed))
    return served


async def test_every_byte_of_a_header_is_refused_or_passed_as_uvicorn_does() -> None:
    """Each of the 256 byte values in a header's name, and in its value, beside valid ones:
    the lean cycle refuses exactly what uvicorn refuses, with its words."""
    cases = []
    for byte in bytes(range(256)):
        odd = b"a" + bytes([byte]) + b"z"
        cases += [[(b"x-ok", b"v"), (odd, b"v")], [(b"x-ok", b"v"), (b"x-odd", odd)]]
    lean = await _headed_answers(LeanHttpTools, cases)
    theirs = await _headed_answers(HttpToolsProtocol, cases)
    assert lean == theirs
    refused = [raised for raised, _, _ in lean if raised]
    names = ["Invalid HTTP header name."]
    assert len(refused) == 49 + 32 and refused.count(names) == 49  # what uvicorn's patterns find


async def test_generated_headers_are_refused_as_uvicorn_refuses_them() -> None:
    """Lists of valid and invalid names and values, in every order: uvicorn names the first
    invalid header's problem (its name before its value), and the lean cycle the same."""
    rng = random.Random(29)
    parts = [b"x-a", b"v 1", b"a\tb", b"x(y", b"v\r\n", b"\x7f", b"\xff", b"n:", b"\x00", b""]
    parts += [b"Content-Type", b"X-(Y)", b"DATE", b"server"]  # checked as they are lowered
    cases = [
        [(rng.choice(parts), rng.choice(parts)) for _ in range(rng.randint(1, 4))]
        for _ in range(400)
    ]
    lean = await _headed_answers(LeanHttpTools, cases)
    theirs = await _headed_answers(HttpToolsProtocol, cases)
    assert lean == theirs
    kinds = {tuple(raised) for raised, _, _ in lean}
    assert kinds == {(), ("Invalid HTTP header name.",), ("Invalid HTTP header value.",)}


async def test_a_body_past_its_length_is_refused() -> None:
    raised: list[BaseException] = []

    async def app(scope: Message, receive: Any, send: Any) -> None:
        headers = [(b"content-length", b"2")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        try:
            await send({"type": "http.response.body", "body": b"abc"})
        except RuntimeError as exc:
            raised.append(exc)
            raise

    served = _Served(app)
    await served.request(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
    assert [str(e) for e in raised] == ["Response content longer than Content-Length"]
    assert served.transport.closed


FORWARDED = (
    b"GET /v1/models HTTP/1.1\r\nhost: x\r\nx-forwarded-for: 203.0.113.9, 127.0.0.1\r\n"
    b"x-forwarded-proto: https\r\n\r\n"
)


async def test_a_trusted_peer_names_the_client_and_the_scheme() -> None:
    served = _Served(_json)
    await served.request(FORWARDED)
    assert served.scopes[0]["client"] == ("203.0.113.9", 0)
    assert served.scopes[0]["scheme"] == "https"
    assert served.protocol.app is not served.protocol.config.loaded_app  # no middleware frame


@pytest.mark.parametrize(
    ("peer", "config"),
    [("192.0.2.1", {}), ("127.0.0.1", {"proxy_headers": False})],
    ids=["untrusted-peer", "proxy-headers-off"],
)
async def test_the_proxy_headers_are_ignored_from_an_untrusted_peer_or_when_off(
    peer: str, config: dict[str, Any]
) -> None:
    served = _Served(_json, peer, **config)
    await served.request(FORWARDED)
    assert served.scopes[0]["client"] == (peer, 50000)
    assert served.scopes[0]["scheme"] == "http"


@pytest.mark.parametrize(
    ("peer", "allowed", "forwarded"),
    [
        ("192.0.2.1", "192.0.2.0/24", b"x-forwarded-for: 203.0.113.9, 127.0.0.1\r\n"),
        ("192.0.2.1", "*", b"x-forwarded-for: 203.0.113.9:4000, 127.0.0.1\r\n"),
        (
            "::1",
            "127.0.0.1,::1",
            b"x-forwarded-for: [2001:db8::1]:80\r\nx-forwarded-proto: wss\r\n",
        ),
        ("127.0.0.1", "127.0.0.1", b"x-forwarded-for: unknown\r\nx-forwarded-proto: ftp\r\n"),
        ("127.0.0.1", "127.0.0.1", b"x-forwarded-for: \r\nx-forwarded-for: 198.51.100.2\r\n"),
        ("127.0.0.1", "127.0.0.1", b"x-forwarded-for: 127.0.0.1\r\n"),
    ],
)
async def test_the_client_and_scheme_are_uvicorns(
    peer: str, allowed: str, forwarded: bytes
) -> None:
    request = b"GET /v1/models HTTP/1.1\r\nhost: x\r\n" + forwarded + b"\r\n"
    served = _Served(_json, peer, forwarded_allow_ips=allowed)
    await served.request(request)
    lean = served.scopes[0]
    # uvicorn's own middleware, given the scope as the lean protocol found it before.
    theirs: list[Message] = []

    async def keep(scope: Message, receive: Any, send: Any) -> None:
        theirs.append(scope)

    plain = _Served(_json, peer, proxy_headers=False)
    await plain.request(request)
    await ProxyHeadersMiddleware(keep, allowed)(dict(plain.scopes[0]), None, None)  # type: ignore[arg-type]
    assert (lean["client"], lean["scheme"]) == (theirs[0]["client"], theirs[0]["scheme"])


@pytest.mark.parametrize("app", ["by messages", "answered at once"])
async def test_a_response_waits_for_a_full_write_buffer(app: str) -> None:
    served = _Served(_json if app == "by messages" else _answered, access_log=False)
    served.protocol.pause_writing()

    async def resume() -> None:
        await asyncio.sleep(0)
        assert served.transport.writes == []  # held while the buffer is full
        served.protocol.resume_writing()

    resuming = asyncio.ensure_future(resume())
    answer = await served.request(POST)
    await resuming
    assert answer.endswith(b'{"a":1}')


async def test_an_idle_connection_is_closed_after_the_keep_alive_time_and_only_then() -> None:
    served = _Served(_json, timeout_keep_alive=5)
    protocol = served.protocol
    await served.request(POST)
    timer = protocol.timeout_keep_alive_task
    assert timer is not None
    await served.request(POST)  # a request on a kept-alive connection keeps its one timer
    assert protocol.timeout_keep_alive_task is timer
    protocol.timeout_keep_alive_handler()  # fired early: armed again for the time left
    assert not served.transport.closed and protocol.timeout_keep_alive_task is not None
    assert 4 < protocol.timeout_keep_alive_task.when() - protocol.loop.time() <= 5
    protocol.timeout_keep_alive_task.cancel()
    protocol.data_received(POST[:20])  # a request has begun: its response arms the timer
    protocol.timeout_keep_alive = 0
    protocol.timeout_keep_alive_handler()
    assert not served.transport.closed and protocol.timeout_keep_alive_task is None
    protocol.timeout_keep_alive = 5
    await served.request(POST[20:])
    assert protocol.timeout_keep_alive_task is not None
    protocol.timeout_keep_alive_task.cancel()
    protocol.timeout_keep_alive = 0
    protocol.timeout_keep_alive_handler()  # idle for the whole time: closed
    assert served.transport.closed


async def test_a_body_that_comes_later_is_waited_for() -> None:
    served = _Served(_json)
    served.protocol.data_received(POST[:-3])
    for _ in range(20):
        await asyncio.sleep(0)
    assert served.transport.writes == []  # the app waits in receive for the rest
    answer = await served.request(POST[-3:])
    assert answer.endswith(b'{"a":1}')


class _Limits:
    max_body_bytes = 1000
    body_timeout_s = 0.01


async def test_a_body_read_whole_needs_no_timer_and_one_still_coming_has_one() -> None:
    seen: list[tuple[bool, bytes | BaseException]] = []
    read = asyncio.Event()

    async def app(scope: Message, receive: Any, send: Any) -> None:
        arrived = bool(scope.get(BODY_ARRIVED))
        try:
            seen.append((arrived, await read_body(receive, scope, _Limits())))
        except Exception as exc:
            seen.append((arrived, exc))
        read.set()
        await _json(scope, _no_body, send)

    served = _Served(app)
    await served.request(POST)
    read.clear()
    served = _Served(app)
    served.protocol.data_received(POST[:-3])  # the rest never comes: the body's timer fires
    async with asyncio.timeout(5):
        await read.wait()
    assert seen[0] == (True, b'{"a":1}')
    arrived, error = seen[1]
    assert not arrived and "did not arrive within 0.01 s" in str(error)


async def test_a_body_still_coming_is_timed_on_the_cycles_task_without_a_loop_lookup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client that writes its head and its body apart (http.client, httpx): the body's
    timer is armed on the request's task taken from the cycle, not by `current_task()` (a
    getpid system call on Python 3.11); the body still arrives, and a late one still times
    out that task."""
    looked: list[object] = []
    current_task = asyncio.current_task

    def spy(loop: Any = None) -> Any:
        looked.append(loop)
        return current_task(loop)

    seen: list[bytes | BaseException] = []
    done = asyncio.Event()

    async def app(scope: Message, receive: Any, send: Any) -> None:
        monkeypatch.setattr(asyncio, "current_task", spy)
        try:
            seen.append(await read_body(receive, scope, _Limits()))
        except Exception as exc:
            seen.append(exc)
        finally:
            monkeypatch.undo()
        done.set()
        await _json(scope, _no_body, send)

    served = _Served(app)
    served.protocol.data_received(POST[:-3])
    for _ in range(5):
        await asyncio.sleep(0)
    await served.request(POST[-3:])
    async with asyncio.timeout(5):
        await done.wait()
    done.clear()
    served = _Served(app)
    served.protocol.data_received(POST[:-3])  # the rest never comes: the body's timer fires
    async with asyncio.timeout(5):
        await done.wait()
    assert seen[0] == b'{"a":1}'
    assert "did not arrive within 0.01 s" in str(seen[1])
    assert looked == []


class _Handle:
    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when, self.callback, self.cancelled = when, callback, False

    def cancel(self) -> None:
        self.cancelled = True


class _Clock:
    """A loop's time and `call_at`, moved by hand."""

    def __init__(self) -> None:
        self.now = 0.0
        self.armed: list[_Handle] = []

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[[], None]) -> _Handle:
        handle = _Handle(when, callback)
        self.armed.append(handle)
        return handle

    def fire(self) -> None:
        """Move to the next live timer and run it."""
        handle = min((h for h in self.armed if not h.cancelled), key=lambda h: h.when)
        self.armed.remove(handle)
        self.now = max(self.now, handle.when)
        handle.callback()


class _Task:
    def __init__(self) -> None:
        self.cancels = 0

    def cancel(self) -> None:
        self.cancels += 1


def test_a_connections_body_reads_share_one_timer_that_cancels_only_an_overdue_read() -> None:
    clock = _Clock()
    flow = Flow(_Transport(), clock)  # type: ignore[arg-type]
    first, second, third, fourth = _Task(), _Task(), _Task(), _Task()
    read = flow.time_body(first, 10)  # type: ignore[arg-type]
    assert [h.when for h in clock.armed] == [10]
    read.cancel()  # the body came: the timer stays armed, nothing is cancelled
    clock.now = 5
    later = flow.time_body(second, 10)  # type: ignore[arg-type]
    read.cancel()  # an earlier read's end does not untime the later one
    assert [(h.when, h.cancelled) for h in clock.armed] == [(10, False)]
    clock.fire()  # at 10, early for the read due at 15: armed again for it
    assert second.cancels == 0 and not later.expired
    assert [h.when for h in clock.armed] == [15]
    clock.fire()
    assert (second.cancels, later.expired, clock.now) == (1, True, 15)
    assert clock.armed == [] and first.cancels == 0
    clock.now = 16
    flow.time_body(third, 10)  # type: ignore[arg-type]
    clock.now = 17
    shorter = flow.time_body(fourth, 2)  # type: ignore[arg-type]  # due before the timer
    assert [(h.when, h.cancelled) for h in clock.armed] == [(26, True), (19, False)]
    shorter.cancel()
    clock.fire()  # no read waits: nothing cancelled, nothing armed again
    assert (third.cancels, fourth.cancels, shorter.expired) == (0, 0, False)
    assert [h for h in clock.armed if not h.cancelled] == []
    flow.time_body(first, 10)  # type: ignore[arg-type]
    flow.close()  # the connection is lost: its timer with it
    assert [h.cancelled for h in clock.armed] == [True, True]


async def test_bodies_still_coming_on_a_connection_arm_its_timer_once_and_cancel_none() -> None:
    """A client that writes each head and body apart: every read is timed, by the
    connection's one timer, armed once, not armed and cancelled per read."""
    seen: list[bytes] = []

    class Limits:
        max_body_bytes = 1000
        body_timeout_s = 30.0

    async def app(scope: Message, receive: Any, send: Any) -> None:
        seen.append(await read_body(receive, scope, Limits()))
        await _json(scope, _no_body, send)

    served = _Served(app)
    flow = served.protocol.flow
    assert isinstance(flow, Flow)
    handles = []
    for _ in range(3):
        served.protocol.data_received(POST[:-3])
        for _ in range(5):
            await asyncio.sleep(0)
        handles.append(flow._timer)
        answer = await served.request(POST[-3:])
        assert answer.startswith(b"HTTP/1.1 200")
    assert seen == [b'{"a":1}'] * 3
    timer = handles[0]
    assert timer is not None and handles == [timer] * 3 and not timer.cancelled()
    served.protocol.connection_lost(None)
    assert timer.cancelled() and flow._timer is None


async def _no_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _fails(scope: Message, receive: Any, send: Any) -> None:
    raise ValueError("broken")


async def _cancelled(scope: Message, receive: Any, send: Any) -> None:
    raise asyncio.CancelledError("timeout graceful shutdown exceeded")


async def _silent(scope: Message, receive: Any, send: Any) -> None:
    pass


async def _half(scope: Message, receive: Any, send: Any) -> None:
    headers = [(b"content-length", b"5")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})


async def _started_then_fails(scope: Message, receive: Any, send: Any) -> None:
    await _half(scope, receive, send)
    raise ValueError("broken")


async def _returns(scope: Message, receive: Any, send: Any) -> Any:
    await _json(scope, receive, send)
    return "something"


@pytest.mark.parametrize(
    ("app", "logged"),
    [
        (_fails, "Exception in ASGI application"),
        (_cancelled, "Exception in ASGI application"),
        (_silent, "returned without starting response"),
        (_half, "returned without completing response"),
        (_started_then_fails, "Exception in ASGI application"),
        (_returns, "should return None, but returned 'something'"),
    ],
)
async def test_an_app_that_fails_is_answered_as_uvicorn_answers_it(
    app: App, logged: str, caplog: pytest.LogCaptureFixture
) -> None:
    answers = []
    for protocol in (LeanHttpTools, HttpToolsProtocol):
        served = _Served(app, protocol=protocol)
        caplog.clear()
        served.protocol.logger.addHandler(caplog.handler)  # uvicorn's logger does not propagate
        try:
            answer = await served.request(POST)
        finally:
            served.protocol.logger.removeHandler(caplog.handler)
        assert [logged in r.getMessage() for r in caplog.records] == [True]
        answers.append((answer, served.transport.closed, served.state.total_requests))
        assert not served.state.tasks
    (lean, *rest), (theirs, *their_rest) = answers
    assert rest == their_rest
    # A head with a length is held by the lean cycle until its body, which never came.
    assert lean == theirs or (lean == b"" and theirs.endswith(b"content-length: 5\r\n\r\n"))


async def test_the_app_is_the_tasks_own_coroutine_and_its_scope_lets_go_of_the_cycle() -> None:
    seen: list[Any] = []

    async def app(scope: Message, receive: Any, send: Any) -> None:
        task = asyncio.current_task()
        assert task is not None
        seen.append(task.get_coro().cr_code)  # type: ignore[union-attr]
        seen.append(scope[CYCLE].task is task)
        await _json(scope, receive, send)

    served = _Served(app)
    await served.request(POST)
    assert seen[0].co_name == "recording" and seen[1]  # no run_asgi frame around the app
    assert CYCLE not in served.scopes[0]
    assert served.protocol.cycle.on_response() is None  # no reference back to the protocol
    assert not served.state.tasks


async def test_an_app_that_only_returns_an_awaitable_runs_in_uvicorns_wrapper() -> None:
    class Router:
        def __call__(self, scope: Message, receive: Any, send: Any) -> Any:
            return _json(scope, receive, send)

    uvicorn_config = Config(Router(), log_level="warning", interface="asgi3")
    uvicorn_config.load()
    protocol = LeanHttpTools(uvicorn_config, ServerState(), {})
    transport = _Transport()
    protocol.connection_made(transport)
    protocol.data_received(POST)
    for _ in range(20):
        await asyncio.sleep(0)
    assert b"".join(transport.writes).endswith(b'{"a":1}')


async def test_a_client_that_leaves_is_told_to_the_watch_at_once() -> None:
    outcome: list[Any] = []
    waiting = asyncio.Event()
    done = asyncio.Event()

    async def app(scope: Message, receive: Any, send: Any) -> None:
        await receive()
        watch = DisconnectWatch(receive, scope)
        outcome.append(watch._timer)  # no timer: the protocol tells the watch
        try:
            waiting.set()
            await asyncio.Future()  # a turn that would never end
        except asyncio.CancelledError:
            outcome.append(watch.departed())
        finally:
            pending = watch.stop()
            if pending is not None:
                await pending
            done.set()

    served = _Served(app)
    served.protocol.data_received(POST)
    async with asyncio.timeout(5):
        await waiting.wait()
        served.protocol.connection_lost(None)
        await done.wait()
    assert outcome == [None, True]


async def test_a_watch_that_ends_before_the_client_leaves_is_not_told() -> None:
    async def app(scope: Message, receive: Any, send: Any) -> None:
        watch = DisconnectWatch(receive, scope)
        assert watch.stop() is None
        assert scope[CYCLE].departed is None
        await _json(scope, receive, send)

    served = _Served(app)
    answer = await served.request(POST)
    assert answer.endswith(b'{"a":1}')
    served.protocol.connection_lost(None)  # after the answer: nothing to cancel


class _Begins:
    """An app that begins its requests itself (as the edge does): `begin_request`."""

    def __init__(self, *, begin_fails: bool = False, end_fails: bool = False) -> None:
        self.begin_fails = begin_fails
        self.end_fails = end_fails
        self.ended: list[Any] = []
        self.var: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="-")

    async def __call__(self, scope: Message, receive: Any, send: Any) -> None:
        raise AssertionError("called only through begin_request")

    def begin_request(self, scope: Message, receive: Any, send: Any) -> Any:
        if self.begin_fails:
            raise ValueError("broken")
        self.var.set("req-1")  # in the context the task runs in, and the end after it
        return _json(scope, receive, send), self.end

    def end(self) -> None:
        self.ended.append(self.var.get())
        if self.end_fails:
            raise ValueError("broken end")


async def test_an_app_that_begins_its_requests_ends_them_in_their_context() -> None:
    app = _Begins()
    uvicorn_config = Config(app, log_level="warning")
    uvicorn_config.load()
    state = ServerState()
    protocol = LeanHttpTools(uvicorn_config, state, {})
    transport = _Transport()
    protocol.connection_made(transport)
    for _ in range(2):
        protocol.data_received(POST)
        for _ in range(20):
            await asyncio.sleep(0)
    assert b"".join(transport.writes).count(b'{"a":1}') == 2
    assert app.ended == ["req-1", "req-1"] and not state.tasks
    assert app.var.get() == "-"  # not the protocol's


@pytest.mark.parametrize(
    ("options", "answer"),
    [({"begin_fails": True}, b"HTTP/1.1 500 "), ({"end_fails": True}, b"HTTP/1.1 200 ")],
)
async def test_a_begin_or_end_that_fails_is_the_apps_exception(
    options: dict[str, bool], answer: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    app = _Begins(**options)
    uvicorn_config = Config(app, log_level="warning")
    uvicorn_config.load()
    protocol = LeanHttpTools(uvicorn_config, ServerState(), {})
    transport = _Transport()
    protocol.connection_made(transport)
    protocol.logger.addHandler(caplog.handler)
    try:
        protocol.data_received(POST)
        for _ in range(20):
            await asyncio.sleep(0)
    finally:
        protocol.logger.removeHandler(caplog.handler)
    assert b"".join(transport.writes).startswith(answer)
    assert ["Exception in ASGI application" in r.getMessage() for r in caplog.records] == [True]
    assert transport.closed  # a 500 closes; a failed end after the answer closes too


async def test_a_body_that_came_whole_is_taken_from_the_cycle_within_its_limit() -> None:
    seen: list[Any] = []

    class Small:
        max_body_bytes = 6
        body_timeout_s = 0.01

    limits: list[Any] = [Small(), _Limits()]

    async def app(scope: Message, receive: Any, send: Any) -> None:
        try:
            seen.append(await read_body(_no_receive, scope, limits.pop(0)))
        except Exception as exc:
            seen.append(type(exc).__name__)
        await _json(scope, _no_body, send)

    served = _Served(app)
    await served.request(POST)
    await served.request(POST)
    assert seen == ["PayloadTooLargeError", b'{"a":1}']


async def _no_receive() -> Message:
    raise AssertionError("a body that came whole is not received")


def test_the_limited_protocol_reads_as_the_lean_one_does() -> None:
    """`LimitedHttpTools.data_received` spells out the lean protocol's (a frame less per
    read): every line of the lean one is in it."""
    from proxy.server.http_limits import LimitedHttpTools

    def lines(function: Any) -> list[str]:
        source = inspect.getsource(function).splitlines()[1:]
        stripped = (line.split("#")[0].strip() for line in source)
        return [line for line in stripped if line]

    limited = lines(LimitedHttpTools.data_received)
    assert [line for line in lines(LeanHttpTools.data_received) if line not in limited] == []


async def test_a_signal_is_set_cleared_and_waited_for_as_an_event() -> None:
    """`Signal` (made without arguments, its state in class attributes until it changes)
    acts as `asyncio.Event` does, and each one's waiters are its own."""
    loop = asyncio.get_running_loop()
    signal, other, event = Signal(), Signal(), asyncio.Event()
    assert not signal.is_set() and not signal.up and signal.waiters == ()
    assert await asyncio.wait_for(_set_soon(signal, signal.wait(loop)), 5) is True
    assert await asyncio.wait_for(_set_soon(event, event.wait()), 5) is True
    assert signal.is_set() and event.is_set() and signal.waiters == []
    assert other.waiters == () and not other.is_set()  # nothing shared through the class
    assert await signal.wait(loop) is True  # set: no wait
    signal.clear()
    assert not signal.is_set()
    waiting = [asyncio.ensure_future(signal.wait(loop)) for _ in range(3)]
    await asyncio.sleep(0)
    assert len(signal.waiters) == 3 and not any(w.done() for w in waiting)
    signal.set()
    assert await asyncio.gather(*waiting) == [True, True, True]
    assert signal.waiters == [] and Signal.waiters == () and Signal.up is False


async def _set_soon(event: Signal | asyncio.Event, waited: Awaitable[bool]) -> bool:
    waiting = asyncio.ensure_future(waited)
    await asyncio.sleep(0)
    assert not waiting.done()
    event.set()
    return await waiting


@pytest.mark.parametrize("root_path", ["", "/proxy"])
async def test_a_connections_repeated_url_gets_the_scope_a_fresh_parse_gives(
    root_path: str,
) -> None:
    """The parts of a connection's last URL are kept for its next request to the same URL:
    every request's path, raw path and query string are what a connection of its own
    parses (repeats, alternations, queries, escapes, fragments)."""
    targets = [
        b"/v1/chat/completions",
        b"/v1/chat/completions",
        b"/v1/models?limit=2",
        b"/v1/models?limit=2",
        b"/v1/models?limit=3",
        b"/v1/chat/completions",
        b"/a%20b/c%2Fd",
        b"/a%20b/c%2Fd",
        b"/x?y=1#frag",
        b"/x",
        b"/x?",
        b"/x?",
        b"/",
    ]
    served = _Served(_json, root_path=root_path)
    for target in targets:
        await served.request(b"GET " + target + b" HTTP/1.1\r\nhost: x\r\n\r\n")
    fresh = []
    for target in targets:
        alone = _Served(_json, root_path=root_path)
        await alone.request(b"GET " + target + b" HTTP/1.1\r\nhost: x\r\n\r\n")
        fresh += alone.scopes
    parts = ("path", "raw_path", "query_string")
    assert len(served.scopes) == len(targets)
    assert [[s[p] for p in parts] for s in served.scopes] == [[s[p] for p in parts] for s in fresh]


@pytest.mark.parametrize("shape", [list, tuple, iter])
async def test_response_headers_of_any_iterable_give_the_same_head(shape: Any) -> None:
    """The response's headers are copied from whatever iterable the app sends: a list, a
    tuple or an iterator give the head a list gives."""

    def app(headers: Any) -> App:
        async def answer(scope: Message, receive: Any, send: Any) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b"ok"})

        return answer

    pairs = [(b"content-type", b"text/plain"), (b"content-length", b"2"), (b"x-a", b"b")]
    expected = await _Served(app(list(pairs))).request(POST)
    assert expected.startswith(b"HTTP/1.1 200 OK\r\nserver: uvicorn\r\ncontent-type: text/plain")
    assert await _Served(app(shape(pairs))).request(POST) == expected


async def test_the_servers_headers_made_once_give_the_head_judged_per_response(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server's own headers are made into the head's items once per list (`_items`),
    unless one sets the length, the encoding or the connection. Over generated server
    headers (mixed case, those names, bytes uvicorn refuses) and app headers, every head,
    or refusal, is the one judged per response as uvicorn does."""
    generated = random.Random(29)
    names = [b"server", b"Date", b"x-Custom", b"content-length", b"Connection", b"bad name"]
    names += [b"transfer-encoding"]
    values = [b"uvicorn", b"Thu, 03 Dec 2026", b"2", b"close", b"chunked", b"bad\x00value"]
    app_names = [b"content-type", b"content-length", b"connection", b"X-App", b"bad:name"]

    async def outcome(defaults: Any, headers: Any) -> bytes | str:
        async def app(scope: Message, receive: Any, send: Any) -> None:
            try:
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": b"ok"})
            except RuntimeError as exc:
                refused.append(str(exc))
                raise

        refused: list[str] = []
        served = _Served(app)
        served.state.default_headers = defaults
        head = await served.request(POST)
        return refused[0] if refused else head

    for _ in range(150):
        defaults = [
            (generated.choice(names), generated.choice(values))
            for _ in range(generated.randrange(0, 4))
        ]
        headers = [
            (generated.choice(app_names), generated.choice(values))
            for _ in range(generated.randrange(0, 4))
        ]
        made = await outcome(defaults, headers)
        with monkeypatch.context() as judged:
            judged.setattr(http_cycle, "_items", lambda headers: None)
            assert await outcome(defaults, headers) == made


_QUIET = {"access_log": False}
"""No access log, as `toolwire serve` runs (uvicorn's own default logs each request)."""
_FIELDS = b"content-type: application/json\r\ncontent-length: 7\r\nx-request-id: r1\r\n"


async def _answered(scope: Message, receive: Any, send: Any) -> None:
    await scope[CYCLE].answer(200, _FIELDS, b'{"a":1}')


async def _by_messages(scope: Message, receive: Any, send: Any) -> None:
    headers = [tuple(line.split(b": ", 1)) for line in _FIELDS.split(b"\r\n")[:-1]]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b'{"a":1}'})


@pytest.mark.parametrize(
    ("request_line", "config", "defaults"),
    [
        (b"POST /v1/chat/completions HTTP/1.1", _QUIET, [(b"server", b"uvicorn")]),
        (b"POST /v1/chat/completions HTTP/1.0", _QUIET, [(b"server", b"uvicorn")]),
        (b"POST /v1/chat/completions HTTP/1.1", {"access_log": True}, []),
        (b"POST /v1/chat/completions HTTP/1.1", _QUIET, [(b"Connection", b"close")]),
        (b"POST /v1/chat/completions HTTP/1.1", _QUIET, [(b"x-a", b"bad\x00value")]),
        (b"HEAD /v1/chat/completions HTTP/1.1", _QUIET, [(b"server", b"uvicorn")]),
    ],
)
async def test_an_answer_written_at_once_is_what_its_two_messages_write(
    request_line: bytes,
    config: dict[str, Any],
    defaults: list[tuple[bytes, bytes]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`Cycle.answer` writes the head and body the two ASGI messages of the same headers
    write, or refuses as they are refused (a server header uvicorn refuses), and closes
    the connection when they do; in one write when nothing else is owed."""
    raw = POST.replace(POST.split(b"\r\n")[0], request_line)

    async def outcome(app: App) -> tuple[bytes | str, bool, int]:
        refused: list[str] = []

        async def failing(scope: Message, receive: Any, send: Any) -> None:
            try:
                await app(scope, receive, send)
            except RuntimeError as exc:
                refused.append(str(exc))
                raise

        served = _Served(failing, **config)
        served.state.default_headers = defaults
        answer = await served.request(raw)
        writes = len(served.transport.writes)
        return (refused[0] if refused else answer), served.transport.closed, writes

    by_messages: list[int] = []
    sent_by_messages = http_cycle.send_fields

    def counted(send: Any, status: int, fields: bytes, body: bytes, more: bool = False) -> Any:
        by_messages.append(status)
        return sent_by_messages(send, status, fields, body, more)

    monkeypatch.setattr(http_cycle, "send_fields", counted)
    logged: list[list[int]] = []
    monkeypatch.setattr(
        http_cycle.LeanCycle, "_log_access", lambda cycle, status: logged[-1].append(status)
    )
    logged.append([])
    made, closed, writes = await outcome(_answered)
    logged.append([])
    assert (made, closed) == (await outcome(_by_messages))[:2]
    assert logged[0] == logged[1] == ([200] if config.get("access_log") else [])
    if isinstance(made, bytes) and request_line.startswith(b"POST"):
        assert made.endswith(b'{"a":1}') and writes == 1
    # Nothing owed (the server's headers valid, a body to send): written at once.
    direct = defaults in ([(b"server", b"uvicorn")], []) and b"POST" in raw[:4]
    assert by_messages == ([] if direct else [200])


_STREAM_FIELDS = b"content-type: text/event-stream\r\nx-request-id: r1\r\n"


def _streamed(bodies: list[tuple[bytes, bool]]) -> tuple[App, App]:
    """An app that sends `bodies` (each with its `more`) by `open_stream` and `chunk`, and one
    that sends them as ASGI messages."""

    async def direct(scope: Message, receive: Any, send: Any) -> None:
        cycle = scope[CYCLE]
        (first, more), *rest = bodies
        await cycle.open_stream(200, _STREAM_FIELDS, first, more)
        for body, more in rest:
            await cycle.chunk(body, more)

    async def by_messages(scope: Message, receive: Any, send: Any) -> None:
        headers = [tuple(line.split(b": ", 1)) for line in _STREAM_FIELDS.split(b"\r\n")[:-1]]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for body, more in bodies:
            await send({"type": "http.response.body", "body": body, "more_body": more})

    return direct, by_messages


@pytest.mark.parametrize(
    "bodies",
    [
        [(b"data: 1\n\n", True), (b"data: 2\n\n", True), (b"", False)],
        [(b"data: 1\n\n", True), (b"data: 2\n\n", False)],
        [(b"data: 1\n\n", False)],
        [(b"", True), (b"data: 1\n\n", False)],
    ],
)
@pytest.mark.parametrize(
    ("request_line", "defaults"),
    [
        (b"POST /v1/chat/completions HTTP/1.1", [(b"server", b"uvicorn")]),
        (b"POST /v1/chat/completions HTTP/1.0", [(b"server", b"uvicorn")]),
        (b"POST /v1/chat/completions HTTP/1.1", [(b"Connection", b"close")]),
        (b"HEAD /v1/chat/completions HTTP/1.1", []),
    ],
)
async def test_a_stream_written_at_once_is_what_its_messages_write(
    bodies: list[tuple[bytes, bool]], request_line: bytes, defaults: list[tuple[bytes, bytes]]
) -> None:
    """`Cycle.open_stream` writes the head (chunked) with the first body and `chunk` each
    next one, as the ASGI messages of the same headers and bodies would, the connection
    closed when they would close it; the head and the first body in one write."""
    raw = POST.replace(POST.split(b"\r\n")[0], request_line)
    direct, by_messages = _streamed(bodies)

    async def outcome(app: App) -> tuple[bytes, bool, int]:
        served = _Served(app, **_QUIET)
        served.state.default_headers = defaults
        answer = await served.request(raw)
        return answer, served.transport.closed, len(served.transport.writes)

    made, closed, writes = await outcome(direct)
    sent, sent_closed, sent_writes = await outcome(by_messages)
    assert (made, closed) == (sent, sent_closed)
    if request_line.startswith(b"POST"):
        assert b"transfer-encoding: chunked" in made and made.endswith(b"0\r\n\r\n")
        if bodies[0][0] and defaults != [(b"Connection", b"close")]:  # (that one: by `send`)
            # The head went out with the first body: a write less.
            assert writes == sent_writes - 1


async def test_an_answer_is_not_written_after_the_client_left() -> None:
    gone = _Served(_answered, **_QUIET)
    gone.protocol.data_received(POST)
    gone.protocol.connection_lost(None)
    for _ in range(20):
        await asyncio.sleep(0)
    assert gone.transport.writes == []
