"""The telemetry's part of every request (`Served`): what it adds to the answer, what it notes,
and that its `send` hands the server's own awaitable back (no coroutine of its own per message),
and the request's counters folded at its end as the metrics' own updates would count them."""

from __future__ import annotations

import inspect
from typing import Any

from proxy.server.asgi import CYCLE
from proxy.server.context import RequestContext, RequestStats
from proxy.server.routes import CHAT
from proxy.telemetry import OVERHEAD_HEADER, Served
from proxy.telemetry.drain import Drain
from proxy.telemetry.metrics import Metrics, ModelLabels

Message = dict[str, Any]


class Sent:
    """An ASGI `send` that records its messages and returns a marker awaitable of its own."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.returned: list[object] = []

    def __call__(self, message: Message) -> Any:
        self.messages.append(message)
        awaitable = _done()
        self.returned.append(awaitable)
        return awaitable


async def _done() -> None:
    return None


def _served(send: Sent, *, turn: bool = True, request_id: str = "req-1") -> Served:
    context = RequestContext(request_id, {})
    context.route = CHAT

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    return Served(receive, send, context, turn, None, {"method": "POST", "path": "/v1/x"})


def _header(message: Message, name: bytes) -> bytes | None:
    return next((value for key, value in message["headers"] if key == name), None)


async def test_send_hands_back_the_servers_awaitable_with_the_id_and_overhead_added() -> None:
    assert not inspect.iscoroutinefunction(Served.send)
    send = Sent()
    served = _served(send)
    start = {
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", b"application/json")],
    }
    returned = served.send(start)
    assert returned is send.returned[0]
    await returned
    sent = send.messages[0]
    assert _header(sent, b"x-request-id") == b"req-1"
    overhead = _header(sent, OVERHEAD_HEADER.encode())
    assert overhead is not None and float(overhead) >= 0
    assert start["headers"] == [(b"content-type", b"application/json")]  # not changed in place
    body = {"type": "http.response.body", "body": b"{}"}
    returned = served.send(body)
    assert returned is send.returned[1] and send.messages[1] is body
    await returned


async def test_a_request_id_the_route_set_is_kept_and_not_repeated() -> None:
    send = Sent()
    served = _served(send, turn=False)
    headers = [(b"x-request-id", b"own-id")]
    await served.send({"type": "http.response.start", "status": 404, "headers": headers})
    assert send.messages[0]["headers"] == headers
    assert served._context.stats.status == 404


async def test_a_streams_last_body_carries_the_overhead_before_done() -> None:
    send = Sent()
    served = _served(send)
    event_stream = (b"content-type", b"text/event-stream; charset=utf-8")
    await served.send({"type": "http.response.start", "status": 200, "headers": [event_stream]})
    assert _header(send.messages[0], OVERHEAD_HEADER.encode()) is None
    await served.send({"type": "http.response.body", "body": b"data: {}\n\n", "more_body": True})
    await served.send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
    last = send.messages[-1]["body"]
    assert last.startswith(b": " + OVERHEAD_HEADER.encode() + b"=")
    assert last.endswith(b"\n\ndata: [DONE]\n\n")
    assert send.messages[1]["body"] == b"data: {}\n\n"


async def test_a_disconnect_is_noted_only_before_the_answer_is_complete() -> None:
    send = Sent()
    served = _served(send)
    assert (await served.receive())["type"] == "http.disconnect"
    assert served._context.stats.disconnected
    send = Sent()
    served = _served(send)
    await served.send({"type": "http.response.start", "status": 200, "headers": []})
    await served.send({"type": "http.response.body", "body": b"{}"})
    await served.receive()
    assert not served._context.stats.disconnected


class _Answering:
    """A server's `Cycle` that records the whole answers and the streams it is given."""

    disconnected = False

    def __init__(self) -> None:
        self.answers: list[tuple[int, bytes, bytes]] = []

    def answer(self, status: int, fields: bytes, body: bytes) -> Any:
        self.answers.append((status, fields, body))
        return _done()

    def open_stream(self, status: int, fields: bytes, body: bytes, more: bool) -> Any:
        self.streamed: list[tuple[Any, ...]] = [(status, fields, body, more)]
        return _done()

    def chunk(self, body: bytes, more: bool) -> Any:
        self.streamed.append((body, more))
        return _done()


async def test_an_answer_sent_whole_is_what_send_makes_of_its_two_messages() -> None:
    """`answer` gives the server's protocol the head's fields and the body at once (`Cycle`),
    or without one sends the two messages: either way the headers `send` would add to a JSON
    answer's own (the request id; on a turn, the overhead), the status noted."""
    for turn in (True, False):
        by_send, by_answer = Sent(), Sent()
        served = _served(by_send, turn=turn)
        headers = [(b"content-type", b"application/json"), (b"content-length", b"2")]
        await served.send({"type": "http.response.start", "status": 201, "headers": headers})
        await served.send({"type": "http.response.body", "body": b"{}"})
        answering = _served(by_answer, turn=turn)
        await answering.answer(201, b"{}")
        assert answering._context.stats.status == 201
        sent, answered = by_send.messages[0]["headers"], by_answer.messages[0]["headers"]
        assert [n for n, _ in sent] == [n for n, _ in answered]
        assert sent[:-1] == answered[:-1] if turn else sent == answered  # the overhead's time
        assert by_answer.messages[1] == {"type": "http.response.body", "body": b"{}"}

        cycle = _Answering()
        context = RequestContext("req-2", {})
        context.route = CHAT
        scope = {"method": "POST", "path": "/v1/x", CYCLE: cycle}
        told = Served(_no_receive, Sent(), context, turn, None, scope)
        await told.answer(200, b"[1]")
        [(status, fields, body)] = cycle.answers
        assert (status, body) == (200, b"[1]")
        lines = fields.split(b"\r\n")
        assert lines[:3] == [
            b"content-type: application/json",
            b"content-length: 3",
            b"x-request-id: req-2",
        ]
        assert lines[-1] == b"" and len(lines) == (5 if turn else 4)
        if turn:
            assert lines[3].startswith(OVERHEAD_HEADER.encode() + b": ")


async def test_a_stream_opened_and_chunked_is_what_send_makes_of_its_messages() -> None:
    """`open_stream` and `chunk` send what `send` makes of an event stream's start and
    bodies (the request id; on a turn, the stream counted and the overhead in its last body),
    as messages without a server's `Cycle`, or given to it at once."""
    event_stream = (b"content-type", b"text/event-stream; charset=utf-8")
    start_headers = [
        event_stream,
        (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),
        (b"x-request-id", b"req-1"),
    ]
    for bodies in ([b"data: 1\n\n", b"data: [DONE]\n\n"], [b"data: [DONE]\n\n"]):
        by_send, by_replies = Sent(), Sent()
        served = _served(by_send)
        await served.send({"type": "http.response.start", "status": 200, "headers": start_headers})
        for at, body in enumerate(bodies):
            more = at < len(bodies) - 1
            await served.send({"type": "http.response.body", "body": body, "more_body": more})
        replying = _served(by_replies)
        await replying.open_stream(bodies[0], len(bodies) > 1)
        for at, body in enumerate(bodies[1:], 2):
            await replying.chunk(body, at < len(bodies))
        assert replying._context.stats.streamed and replying._context.stats.status == 200
        sent, replied = by_send.messages, by_replies.messages
        assert sent[0] == replied[0]
        assert [m["body"].split(b": x-toolwire")[0] for m in sent[1:]] == [
            m["body"].split(b": x-toolwire")[0] for m in replied[1:]
        ]
        assert replied[-1]["body"].endswith(b"\n\ndata: [DONE]\n\n")
        assert b": " + OVERHEAD_HEADER.encode() + b"=" in replied[-1]["body"]

    cycle = _Answering()
    scope = {"method": "POST", "path": "/v1/x", CYCLE: cycle}
    context = RequestContext("req-3", {})
    context.route = CHAT
    told = Served(_no_receive, Sent(), context, True, None, scope)
    await told.open_stream(b"data: 1\n\n")
    await told.chunk(b"data: [DONE]\n\n", False)
    (status, fields, first, more), (last, last_more) = cycle.streamed
    assert (status, first, more, last_more) == (200, b"data: 1\n\n", True, False)
    assert fields.endswith(b"x-request-id: req-3\r\n") and b"text/event-stream" in fields
    assert last.startswith(b": " + OVERHEAD_HEADER.encode() + b"=")


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


def test_a_requests_counters_are_the_tallies_own_updates() -> None:
    """`count_request` updates the tallies by hand (every request pays it): the same values
    as their own `inc` and `observe`, for a request with a turn and one without."""
    folded, spelled = Metrics(ModelLabels(["m"])), Metrics(ModelLabels(["m"]))
    turn = RequestStats()
    turn.started, turn.model, turn.status, turn.upstream_calls, turn.upstream_s = (
        100.0,
        "m",
        200,
        3,
        0.5,
    )
    turn.input_tokens, turn.output_tokens, turn.stopped_by = 12, 7, "max_iterations"
    plain = RequestStats()
    plain.started, plain.status = 100.0, 404
    for stats in (turn, plain, turn):
        folded.count_request("chat", "team", stats, 100.75)
    for _ in range(2):
        spelled.requests("chat", "m", "team", "200").inc()
        spelled.request_seconds("chat").observe(0.75)
        spelled.overhead_seconds("chat").observe(turn.overhead_s(100.75))
        spelled.iterations.observe(3)
        spelled.tokens("m", "team", "input").inc(12)
        spelled.tokens("m", "team", "output").inc(7)
        spelled.guard_stops("max_iterations").inc()
    spelled.requests("chat", "-", "team", "404").inc()
    spelled.request_seconds("chat").observe(0.75)
    for direction in ("input", "output"):  # every key's request makes its token counters
        spelled.tokens("-", "team", direction)
    assert _values(folded) == _values(spelled)
    assert (
        _values(folded)['toolwire_requests_total{front="chat",key="team",model="m",status="200"}']
        == "2.0"
    )


def test_an_upstream_calls_counters_are_the_tallies_own_updates() -> None:
    """`count_upstream_call` updates the tallies by hand too, its model named as labels are."""
    folded, spelled = Metrics(ModelLabels(["m"])), Metrics(ModelLabels(["m"]))
    folded.count_upstream_call("up", "m", "ok", 0.3, 0.02)
    folded.count_upstream_call("up", "elsewhere", "error", 1.5)
    folded.count_upstream_call("up", "", "ok", 0.07)
    folded.count_upstream_call("up", "m", "ok", 0.4)
    for model, outcome, seconds, first in (
        ("m", "ok", 0.3, 0.02),
        ("other", "error", 1.5, None),
        ("-", "ok", 0.07, None),
        ("m", "ok", 0.4, None),
    ):
        spelled.upstream_calls("up", model, outcome).inc()
        spelled.upstream_seconds("up", model).observe(seconds)
        first_token = spelled.first_token_seconds("up", model)
        if first is not None:
            first_token.observe(first)
    assert _values(folded) == _values(spelled)
    calls = 'toolwire_upstream_calls_total{model="m",outcome="ok",upstream="up"}'
    assert _values(folded)[calls] == "2.0"


def _values(metrics: Metrics) -> dict[str, str]:
    """The exposition's samples but their creation times."""
    lines = metrics.exposition().decode().splitlines()
    samples = (line.rsplit(" ", 1) for line in lines if not line.startswith("#"))
    return {name: value for name, value in samples if "_created" not in name}


def test_open_streams_are_counted_here_and_set_into_the_gauge_at_each_fold() -> None:
    """The open streams gauge changes twice per stream: a number counted without the gauge's
    lock (the gauge itself is untouched until a fold), exact in every scrape."""
    metrics = Metrics(ModelLabels([]))
    streams = metrics.open_streams
    streams.inc()
    streams.inc()
    streams.dec()
    assert metrics.registry.get_sample_value("toolwire_open_streams") == 0.0  # not yet folded
    assert _values(metrics)["toolwire_open_streams"] == "1.0"
    assert _values(metrics)["toolwire_open_streams"] == "1.0"  # a second scrape: the same
    streams.dec()
    metrics.fold()
    assert metrics.registry.get_sample_value("toolwire_open_streams") == 0.0
    assert _values(metrics)["toolwire_open_streams"] == "0.0"


class _Cycle:
    def __init__(self, disconnected: bool) -> None:
        self.disconnected = disconnected


async def test_a_server_that_tells_of_cycle_is_asked_at_the_end() -> None:
    for disconnected in (True, False):
        context = RequestContext("req-2", {})
        context.route = CHAT
        scope = {"method": "POST", "path": "/v1/chat/completions"}
        scope[CYCLE] = _Cycle(disconnected)  # type: ignore[assignment]
        drain = Drain()
        waited = drain.admit("POST")
        served = Served(_never, Sent(), context, True, None, scope, drain if waited else None)
        assert served.told
        served.end()
        assert context.stats.disconnected is disconnected
        assert context.stats.status == (499 if disconnected else 500)
        assert drain._running == 0


async def _never() -> Message:
    raise AssertionError("the server's own receive is not wrapped")
