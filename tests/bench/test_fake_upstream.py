"""The benches' fake upstream (`bench/fake_upstream.py`) answers what the test suite's
(`testing.upstream`, aiohttp) answers for the default text, byte for byte and write for
write, its ids, times and `Date` aside: over the bodies the benches send and others, the
other routes, HTTP/1.0, a closed connection, a body sent after its head, and pipelining."""

from __future__ import annotations

import asyncio
import re
from asyncio import selector_events
from collections.abc import Iterator
from typing import Any

import httptools
import orjson
import pytest

from bench import fake_upstream
from bench.workload import CHUNKS, TEXT, request_body
from testing.upstream import FakeUpstream, Reply

_ID = re.compile(rb"chatcmpl-[0-9a-f]{32}")
_CREATED = re.compile(rb'"created":\d+')
_DATE = re.compile(rb"Date: [^\r]*\r\n")


def _post(body: bytes, path: bytes = b"/v1/chat/completions", extra: bytes = b"") -> bytes:
    head = b"POST %b HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" % path
    return head + extra + b"Content-Length: %d\r\n\r\n" % len(body) + body


def _get(path: bytes, version: bytes = b"1.1") -> bytes:
    return b"GET %b HTTP/%b\r\nHost: x\r\n\r\n" % (path, version)


def _bodies() -> Iterator[tuple[str, bytes]]:
    for stream in (False, True):
        body = request_body(stream)
        yield f"bench {stream}", orjson.dumps(body)
        tools = [{"type": "function", "function": {"name": "t", "parameters": {}}}]
        injected = body | {"tools": tools, "model": "other-model"}
        if stream:
            injected["stream_options"] = {"include_usage": True}
        yield f"injected {stream}", orjson.dumps(injected)
    yield "no model", orjson.dumps({"messages": [], "stream": 1})
    yield "a number for a model", orjson.dumps({"model": 7, "stream_options": []})
    yield "usage not asked", orjson.dumps({"stream": True, "stream_options": {"x": 1}})
    yield "not JSON", b"{not json"
    yield "not an object", b"[1, 2]"


REQUESTS: list[tuple[str, list[bytes]]] = [
    *[(name, [_post(body)]) for name, body in _bodies()],
    ("a query", [_post(b'{"stream": true}', b"/chat/completions?x=1")]),
    ("closed", [_post(b'{"stream": true}', extra=b"Connection: close\r\n")]),
    ("models", [_get(b"/v1/models")]),
    ("models, no prefix", [_get(b"/models?a=b")]),
    ("models posted", [_post(b"{}", b"/v1/models")]),
    ("chat got", [_get(b"/v1/chat/completions")]),
    ("no route", [_get(b"/v2/elsewhere")]),
    ("HTTP/1.0", [_post(b"{}").replace(b"HTTP/1.1", b"HTTP/1.0")]),
    ("HTTP/1.0 stream", [_post(b'{"stream":true}').replace(b"HTTP/1.1", b"HTTP/1.0")]),
    ("HTTP/1.0 models", [_get(b"/v1/models", b"1.0")]),
    ("body after head", [_post(b'{"model": "m"}')[:-14], _post(b'{"model": "m"}')[-14:]]),
    ("pipelined", [_post(b"{}") + _post(b'{"stream": true}') + _get(b"/models")]),
]


def _normal(data: bytes) -> bytes:
    return _DATE.sub(b"Date: -\r\n", _CREATED.sub(b'"created":0', _ID.sub(b"chatcmpl-x", data)))


class _Writes:
    """Every write of a server's transports (the test loop's selector transports), by port."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.by_port: dict[int, list[bytes]] = {}
        transports: Any = selector_events
        write = transports._SelectorSocketTransport.write

        def recording(transport: Any, data: Any) -> None:
            port = transport.get_extra_info("sockname")[1]
            self.by_port.setdefault(port, []).append(bytes(data))
            write(transport, data)

        monkeypatch.setattr(transports._SelectorSocketTransport, "write", recording)


class _Answers:
    """Counts the answers in what a client reads (`httptools`' response parser)."""

    def __init__(self) -> None:
        self.complete = 0
        self.parser = httptools.HttpResponseParser(self)

    def on_message_complete(self) -> None:
        self.complete += 1


async def _exchange(port: int, parts: list[bytes], answers: int) -> bytes:
    """Send `parts` apart, then read until `answers` are complete or the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    counted = _Answers()
    received = b""
    try:
        async with asyncio.timeout(10):
            for part in parts:
                writer.write(part)
                await writer.drain()
            while counted.complete < answers and (piece := await reader.read(65536)):
                received += piece
                counted.parser.feed_data(piece)
    finally:
        writer.close()
    return received


def _port(base_url: str) -> int:
    return int(base_url.rsplit(":", 1)[1].split("/")[0])


@pytest.mark.parametrize(("name", "parts"), REQUESTS, ids=[name for name, _ in REQUESTS])
async def test_the_fake_answers_as_the_suites_fake_does(
    name: str, parts: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    writes = _Writes(monkeypatch)
    server, base_url = await fake_upstream.start("127.0.0.1", 0, CHUNKS, TEXT)
    ours = _port(base_url)
    try:
        async with FakeUpstream(Reply.text(TEXT, chunks=CHUNKS)) as suites:
            theirs = _port(suites.base_url)
            count = b"".join(parts).count(b" HTTP/1.")
            expected = await _exchange(theirs, parts, count)
            got = await _exchange(ours, parts, count)
    finally:
        server.close()
        await server.wait_closed()
    assert expected.startswith(b"HTTP/1.")
    assert _normal(got) == _normal(expected)
    assert [_normal(w) for w in writes.by_port[ours]] == [
        _normal(w) for w in writes.by_port[theirs]
    ]


async def test_an_answer_is_made_once_a_second_and_taken_by_its_body_after() -> None:
    answers = fake_upstream.Answers(TEXT, CHUNKS, ("fake-model",))
    body = orjson.dumps(request_body(True))
    first = answers.chat(body, True, True)
    assert answers.chat(bytes(bytearray(body)), True, True) is first  # the same bytes
    assert len(first) == 1 + (1 + CHUNKS + 1 + 1) + 1  # head, role, text, finish, [DONE], end
    assert answers.chat(body, True, False) is not first  # `Connection: close` in its head
    old_id = answers.id
    answers.tick()
    again = answers.chat(body, True, True)
    assert again is not first and answers.id != old_id
    assert [_normal(frame) for frame in again] == [_normal(frame) for frame in first]


async def test_distinct_bodies_past_the_limit_are_forgotten_all_at_once() -> None:
    answers = fake_upstream.Answers(TEXT, None, ("fake-model",))
    for n in range(fake_upstream.KEPT_ANSWERS + 1):
        answers.chat(orjson.dumps({"model": f"m{n}"}), True, True)
    assert len(answers.made) == 1
