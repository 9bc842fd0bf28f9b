"""HTTPUpstream against upstreams that misbehave at the HTTP level.

Cut streams and bodies, pooled connections the server drops under a request, and errors that
echo the credentials.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest

from proxy.config import UpstreamConfig
from proxy.errors import UpstreamError
from proxy.upstreams import HTTPUpstream
from registry.http1 import pool
from testing.misbehaving_upstream import (
    Act,
    MisbehavingUpstream,
    chunk,
    completion,
    json_reply,
    sse_reply,
)

ROLE = chunk({"role": "assistant", "content": ""})
PARTIAL = [ROLE, chunk({"content": "The answer is"})]
WHOLE = [*PARTIAL, chunk({"content": " 42."}), chunk({}, "stop")]
CUT = "ended before the answer was complete"
SECRET = "sk-proxy-secret-0123456789"


@contextlib.asynccontextmanager
async def pointed_at(fake: MisbehavingUpstream, **config: Any) -> AsyncIterator[HTTPUpstream]:
    upstream = HTTPUpstream(UpstreamConfig(name="fake", base_url=fake.base_url, **config))
    try:
        yield upstream
    finally:
        await upstream.aclose()


def ask(stream: bool) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}


async def drain(upstream: HTTPUpstream, body: dict[str, Any], into: list[dict[str, Any]]) -> None:
    async with upstream.complete(body) as chunks:
        async for item in chunks:
            into.append(item)


def text(chunks: list[dict[str, Any]]) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def cut_stream(events: list[Any], framing: str) -> Act:
    """A stream that ends cleanly (terminating chunk, or FIN) without [DONE]."""
    then = "fin" if framing == "close" else "keep"
    return Act.answer(sse_reply(events, framing=framing), then=then)


@pytest.mark.parametrize("framing", ["chunked", "close"])
async def test_stream_cut_cleanly_after_chunks_is_an_error(framing: str) -> None:
    # Regression: an upstream that closed mid-answer looked like a complete, shorter answer.
    async with MisbehavingUpstream(cut_stream(PARTIAL, framing)) as fake, pointed_at(fake) as up:
        received: list[dict[str, Any]] = []
        with pytest.raises(UpstreamError, match=CUT) as caught:
            await drain(up, ask(True), received)
    assert caught.value.status == 502
    assert caught.value.code == "upstream_error"
    assert text(received) == "The answer is"
    assert len(fake.requests) == 1, "a stream that reached the caller is never asked again"


@pytest.mark.parametrize("framing", ["chunked", "close"])
async def test_empty_stream_is_asked_once_more(framing: str) -> None:
    first, second = cut_stream([], framing), Act.answer(sse_reply(WHOLE, done=True))
    async with MisbehavingUpstream(first, second) as fake, pointed_at(fake) as upstream:
        received: list[dict[str, Any]] = []
        await drain(upstream, ask(True), received)
    assert text(received) == "The answer is 42."
    assert len(fake.requests) == 2


async def test_stream_cut_before_any_chunk_twice_is_an_error() -> None:
    empty = cut_stream([], "chunked")
    async with MisbehavingUpstream(empty, empty, empty) as fake, pointed_at(fake) as upstream:
        with pytest.raises(UpstreamError, match=CUT):
            await drain(upstream, ask(True), [])
    assert len(fake.requests) == 2


async def test_retry_of_an_empty_stream_that_gets_cut_is_an_error() -> None:
    empty, partial = cut_stream([], "chunked"), cut_stream(PARTIAL, "chunked")
    async with MisbehavingUpstream(empty, partial) as fake, pointed_at(fake) as upstream:
        received: list[dict[str, Any]] = []
        with pytest.raises(UpstreamError, match=CUT):
            await drain(upstream, ask(True), received)
    assert text(received) == "The answer is"


@pytest.mark.parametrize(
    "events",
    [
        pytest.param(WHOLE, id="finish-reason"),
        pytest.param(
            [*WHOLE, {"id": "c1", "choices": [], "usage": {"total_tokens": 3}}], id="usage"
        ),
    ],
)
async def test_finished_stream_without_done_is_complete(events: list[Any]) -> None:
    # Some servers end the stream after the finish chunk and never send [DONE].
    async with MisbehavingUpstream(cut_stream(events, "close")) as fake, pointed_at(fake) as up:
        received: list[dict[str, Any]] = []
        await drain(up, ask(True), received)
    assert text(received) == "The answer is 42."
    assert len(fake.requests) == 1


async def test_stream_with_done_but_no_finish_reason_is_complete() -> None:
    reply = Act.answer(sse_reply(PARTIAL, done=True))
    async with MisbehavingUpstream(reply) as fake, pointed_at(fake) as upstream:
        received: list[dict[str, Any]] = []
        await drain(upstream, ask(True), received)
    assert text(received) == "The answer is"


async def test_last_event_without_blank_line_still_counts() -> None:
    reply = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    reply += (
        b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}'
    )
    async with MisbehavingUpstream(Act.answer(reply, then="fin")) as fake, pointed_at(fake) as up:
        received: list[dict[str, Any]] = []
        await drain(up, ask(True), received)
    assert text(received) == "hi"


@pytest.mark.parametrize("framing", ["length", "close", "chunked"])
async def test_unstreamed_body_cut_short_is_a_502(framing: str) -> None:
    body = completion("a whole answer")
    whole = json_reply(body)
    head, _, payload = whole.partition(b"\r\n\r\n")
    cut = payload[: len(payload) // 2]
    if framing == "length":
        reply = head + b"\r\n\r\n" + cut
    elif framing == "close":
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close"
        reply = head + b"\r\n\r\n" + cut
    else:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked"
        reply = head + b"\r\n\r\n" + b"%x\r\n%s\r\n" % (len(cut), cut)
    async with MisbehavingUpstream(Act.answer(reply, then="fin")) as fake, pointed_at(fake) as up:
        with pytest.raises(UpstreamError) as caught:
            await drain(up, ask(False), [])
    assert caught.value.status == 502
    assert caught.value.code == "upstream_error"


async def test_proxy_ends_a_cut_stream_with_an_error(make_proxy: Any) -> None:
    # What the client sees: the text so far, then an error the SDK raises, never a clean end.
    async with (
        MisbehavingUpstream(cut_stream(PARTIAL, "chunked")) as fake,
        make_proxy(upstream={"base_url": fake.base_url}) as proxy,
    ):
        stream = await proxy.client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        pieces: list[str] = []
        with pytest.raises(openai.APIError, match=CUT):
            async for event in stream:
                if event.choices:
                    pieces.append(event.choices[0].delta.content or "")
    assert "".join(pieces) == "The answer is"


def answer(content: str) -> Act:
    return Act.answer(json_reply(completion(content)))


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("drop", [Act.hang_up(), Act.reset()], ids=["closed", "reset"])
async def test_pooled_connection_dropped_under_a_request_is_sent_again(
    drop: Act, stream: bool
) -> None:
    # Regression: the keep-alive race (the server closes an idle connection just as the next
    # request goes out on it) failed the request with "Server disconnected" or a reset.
    second = Act.answer(sse_reply(WHOLE, done=True)) if stream else answer("The answer is 42.")
    async with MisbehavingUpstream(answer("first"), drop, second) as fake, pointed_at(fake) as up:
        first: list[dict[str, Any]] = []
        await drain(up, ask(False), first)
        received: list[dict[str, Any]] = []
        await drain(up, ask(stream), received)
    assert text(first) == "first"
    assert text(received) == "The answer is 42."
    assert len(fake.requests) == 3
    assert fake.connections == 2, "the first request's connection was reused, then replaced"


async def test_request_dropped_twice_is_sent_only_twice() -> None:
    async with MisbehavingUpstream(default=Act.hang_up()) as fake, pointed_at(fake) as upstream:
        with pytest.raises(UpstreamError, match="unreachable") as caught:
            await drain(upstream, ask(True), [])
    assert caught.value.status == 502
    assert len(fake.requests) == 2


@pytest.mark.parametrize(
    "partial",
    [b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"],
    ids=["status-line", "some-headers"],
)
async def test_request_that_got_part_of_an_answer_is_not_sent_again(partial: bytes) -> None:
    async with MisbehavingUpstream(Act.answer(partial, then="fin")) as fake, pointed_at(fake) as up:
        with pytest.raises(UpstreamError) as caught:
            await drain(up, ask(True), [])
    assert caught.value.status == 502
    assert len(fake.requests) == 1


async def test_idle_connections_are_dropped_before_uvicorns_keepalive_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # uvicorn closes a connection idle for 5 s; ours must be gone before, not raced at 5 s.
    now = [1000.0]
    monkeypatch.setattr(pool, "_clock", lambda: now[0])
    async with MisbehavingUpstream(default=answer("ok")) as fake, pointed_at(fake) as upstream:
        await drain(upstream, ask(False), [])
        now[0] += 3.0
        await drain(upstream, ask(False), [])
        assert fake.connections == 1, "a connection idle for 3 s is reused"
        now[0] += 4.5
        await drain(upstream, ask(False), [])
    assert fake.connections == 2


@pytest.mark.parametrize("api_key", [SECRET, ""], ids=["configured", "forwarded"])
async def test_key_echoed_in_a_streamed_error_never_reaches_the_client(api_key: str) -> None:
    error = {"error": {"message": f"key {SECRET} was revoked", "type": "auth_error"}}
    reply = Act.answer(sse_reply([ROLE, error], done=True))
    async with MisbehavingUpstream(reply) as fake, pointed_at(fake, api_key=api_key) as upstream:
        with pytest.raises(UpstreamError, match="mid-stream") as caught:
            async with upstream.complete(ask(True), headers={"authorization": SECRET}) as chunks:
                async for _ in chunks:
                    pass
    assert SECRET not in caught.value.message
    assert "key [redacted] was revoked" in caught.value.message


@pytest.mark.parametrize("then", ["fin", "keep"], ids=["cut", "stalled"])
async def test_error_status_whose_body_breaks_off_is_still_mapped(then: Any) -> None:
    # The error body is cut or stalls: the status alone decides, and no client error escapes.
    reply = b"HTTP/1.1 500 X\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n"
    act = Act.answer(reply, then=then)
    async with MisbehavingUpstream(act) as fake, pointed_at(fake, idle_timeout_s=0.2) as up:
        with pytest.raises(UpstreamError, match=r"failed \(500\)") as caught:
            await drain(up, ask(True), [])
    assert caught.value.status == 502
