"""Streamable HTTP calls reuse one connection: answers' streams are read to their end on close."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import anyio
import httpx2
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from registry.mcp import keepalive, pool, streamable_http
from registry.mcp.keepalive import read_to_end
from registry.mcp.pool import pooled_client
from testing.mcp_servers import serve_http

IDLE_S = 600
"""Idle connections are kept this long on both sides in the reuse tests: however slowly a
loaded machine gets from one call to the next, no connection expires between them."""


def _keep_idle_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client side of `IDLE_S`, for both transports' pools."""
    monkeypatch.setattr(pool, "KEEPALIVE_S", IDLE_S)
    monkeypatch.setattr(streamable_http, "KEEPALIVE_S", IDLE_S)


def _recording_posts(posts: list[tuple[str, int]]) -> Callable[[ASGIApp], ASGIApp]:
    """Wraps an app so that every POST's client address (host, port) lands in `posts`."""

    def record(app: ASGIApp) -> ASGIApp:
        async def recorded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["method"] == "POST":
                posts.append(scope["client"])
            await app(scope, receive, send)

        return recorded

    return record


async def test_calls_over_streamable_http_share_one_connection(
    start_source, call_tool, monkeypatch
):
    _keep_idle_connections(monkeypatch)
    posts: list[tuple[str, int]] = []
    record = _recording_posts(posts)
    async with serve_http("demo", "streamable-http", wrap=record, keep_alive_s=IDLE_S) as url:
        source = await start_source({"mcp": {"url": url}, "namespace": "demo"})
        first = len(posts)
        for number in range(5):
            assert (await call_tool("demo.echo", text=str(number))).content == str(number)
        await source.aclose()

    # One client address: the five calls went over one kept-alive connection, not five.
    assert len(posts) - first == 5
    assert len(set(posts[first:])) == 1


class _Waves:
    """Wraps an app so that, once a wave is armed, each POST is held until `size` are held
    at once: a wave's calls overlap however slowly a loaded machine sends them."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._held = 0
        self._full: asyncio.Event | None = None

    def arm(self) -> None:
        self._held, self._full = 0, asyncio.Event()

    def disarm(self) -> None:
        self._full = None

    def wrap(self, app: ASGIApp) -> ASGIApp:
        async def held(scope: Scope, receive: Receive, send: Send) -> None:
            full = self._full
            if full is not None and scope["type"] == "http" and scope["method"] == "POST":
                self._held += 1
                if self._held == self.size:
                    full.set()
                await full.wait()
            await app(scope, receive, send)

        return held


async def test_concurrent_calls_keep_their_connections(start_source, call_tool, monkeypatch):
    """Thirty calls at once, twice: the second wave reuses the first wave's connections
    (httpx's default pool kept 20 and opened ten new ones per wave)."""
    _keep_idle_connections(monkeypatch)
    posts: list[tuple[str, int]] = []
    record = _recording_posts(posts)
    waves = _Waves(30)

    async def wave() -> None:
        # Each call holds its connection until all thirty have arrived.
        waves.arm()
        async with asyncio.timeout(IDLE_S / 4):
            answers = await asyncio.gather(
                *(call_tool("demo.echo", text=str(n)) for n in range(waves.size))
            )
        waves.disarm()
        assert [a.content for a in answers] == [str(n) for n in range(waves.size)]

    async with serve_http(
        "demo", "streamable-http", wrap=lambda app: record(waves.wrap(app)), keep_alive_s=IDLE_S
    ) as url:
        source = await start_source({"mcp": {"url": url}, "namespace": "demo"})
        first = len(posts)
        await wave()
        opened = set(posts[first:])
        assert len(opened) == 30
        await wave()
        await source.aclose()
    assert len(posts) - first == 60
    assert set(posts[first:]) == opened, "the second wave opened new connections"


async def test_a_connection_the_server_closed_while_idle_is_replaced():
    """The pool's idle check (`registry.mcp.pool`) still sees a server's close: the next
    request goes out on a new connection instead of failing on the dead one."""
    peers: list[tuple[str, int]] = []
    closed = asyncio.Queue[None]()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peers.append(writer.get_extra_info("peername"))
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()  # right after the answer, keep-alive notwithstanding
        await writer.wait_closed()
        closed.put_nowait(None)

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, pooled_client() as client:
        # The wiring `pooled_client` relies on (an httpx internal): its pool's backend.
        assert isinstance(client._transport._pool._network_backend, pool._Backend)
        for _ in range(3):
            assert (await client.get(f"http://127.0.0.1:{port}/")).text == "ok"
            async with asyncio.timeout(10):
                await closed.get()  # the server closed the now idle connection
    assert len(set(peers)) == 3


async def test_proxies_from_the_environment_still_apply(monkeypatch):
    """The pooled client builds its own transports, so `HTTP_PROXY` is still honoured."""
    seen: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append((await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")[0])
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(proxy, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with server, pooled_client() as client:
        assert (await client.get("http://mcp.example/mcp")).text == "ok"
    assert seen == [b"GET http://mcp.example/mcp HTTP/1.1"]


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

    async with asyncio.timeout(10):  # not the test's whole time: the drain gives up
        await _first_chunk_then_close(response)

    assert body.closed and body.sent == 2


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
    # Only `slow` has the short deadline: the call after it has the default, however loaded
    # the machine.
    slow = {"slow": {"timeout_s": 0.5}}
    async with serve_http("demo", "streamable-http") as url:
        source = await start_source({"mcp": {"url": url}, "namespace": "demo", "overrides": slow})
        # Well short of the slow call's 30 s: neither the call nor the close waits for it.
        async with asyncio.timeout(15):
            timed_out = await call_tool("demo.slow", seconds=30)
            after = await call_tool("demo.echo", text="still here")
            await source.aclose()

    assert timed_out.error_kind == "timeout"
    assert after.content == "still here"
