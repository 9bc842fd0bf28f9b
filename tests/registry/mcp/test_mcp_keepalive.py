"""Streamable HTTP calls reuse one connection: answers' streams are read to their end on close."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import anyio
import httpx2
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from registry.mcp import keepalive
from registry.mcp.keepalive import read_to_end
from tests.fakes.mcp_servers import serve_http


async def test_calls_over_streamable_http_share_one_connection(start_source, call_tool):
    posts: list[tuple[str, int]] = []

    def record(app: ASGIApp) -> ASGIApp:
        async def recorded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["method"] == "POST":
                posts.append(scope["client"])
            await app(scope, receive, send)

        return recorded

    async with serve_http("demo", "streamable-http", wrap=record) as url:
        source = await start_source({"mcp": {"url": url}, "namespace": "demo"})
        first = len(posts)
        for number in range(5):
            assert (await call_tool("demo.echo", text=str(number))).content == str(number)
        await source.aclose()

    # One client address: the five calls went over one kept-alive connection, not five.
    assert len(posts) - first == 5
    assert len(set(posts[first:])) == 1


class _Body(httpx2.AsyncByteStream):
    """A response body: some chunks, then (unless `ends`) silence until cancelled."""

    def __init__(self, chunks: list[bytes], *, ends: bool = True) -> None:
        self._chunks = chunks
        self._ends = ends
        self.sent = 0
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            self.sent += 1
            yield chunk
        if not self._ends:
            await anyio.Event().wait()

    async def aclose(self) -> None:
        self.closed = True


def _response(
    body: _Body, method: str = "POST", content_type: str = "text/event-stream"
) -> httpx2.Response:
    request = httpx2.Request(method, "http://mcp.test/mcp")
    headers = {"content-type": content_type}
    return httpx2.Response(200, headers=headers, stream=body, request=request)


async def _first_chunk_then_close(response: httpx2.Response) -> None:
    async for _ in response.aiter_raw():
        break
    await response.aclose()


async def test_closing_an_answer_early_reads_the_rest_then_closes():
    body = _Body([b"event: message\r\n\r\n", b"", b"tail"])
    response = _response(body)
    await read_to_end(response)

    await _first_chunk_then_close(response)

    assert body.sent == 3 and body.closed


async def test_an_answer_that_does_not_end_is_closed_after_the_drain_time(monkeypatch):
    monkeypatch.setattr(keepalive, "DRAIN_S", 0.05)
    body = _Body([b"event: message\r\n\r\n", b"more"], ends=False)
    response = _response(body)
    await read_to_end(response)

    started = time.monotonic()
    await _first_chunk_then_close(response)

    assert body.closed and body.sent == 2
    assert time.monotonic() - started < 2


async def test_no_more_than_drain_bytes_are_read(monkeypatch):
    monkeypatch.setattr(keepalive, "DRAIN_BYTES", 10)
    body = _Body([b"event", b"x" * 8, b"y" * 8, b"never read"])
    response = _response(body)
    await read_to_end(response)

    await _first_chunk_then_close(response)

    assert body.sent == 3 and body.closed


@pytest.mark.parametrize(
    ("method", "content_type"), [("GET", "text/event-stream"), ("POST", "application/json")]
)
async def test_only_a_posts_event_stream_is_read_to_its_end(method: str, content_type: str):
    body = _Body([b"first", b"second"])
    response = _response(body, method, content_type)
    await read_to_end(response)

    await _first_chunk_then_close(response)

    assert body.sent == 1 and body.closed


@pytest.mark.timeout(20)
async def test_a_timed_out_call_over_streamable_http_leaves_the_session_usable(
    start_source, call_tool
):
    async with serve_http("demo", "streamable-http") as url:
        source = await start_source({"mcp": {"url": url}, "namespace": "demo", "timeout_s": 0.5})
        started = time.monotonic()

        timed_out = await call_tool("demo.slow", seconds=30)
        after = await call_tool("demo.echo", text="still here")
        await source.aclose()

    assert timed_out.error_kind == "timeout"
    assert after.content == "still here"
    assert time.monotonic() - started < 5
