"""Reading an operation's answer: a body of declared length within the limit in one read,
every other body chunk by chunk; both capped at the limit alike."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

import registry.openapi.http as http

LIMIT = 1000


async def _sized(request: web.Request) -> web.Response:
    return web.Response(body=b"x" * int(request.query["size"]))


async def _chunked(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()
    response.enable_chunked_encoding()
    await response.prepare(request)
    for _ in range(int(request.query["size"]) // 100):
        await response.write(b"y" * 100)
    await response.write_eof()
    return response


async def _compressed(request: web.Request) -> web.Response:
    body = gzip.compress(b"z" * int(request.query["size"]))
    return web.Response(body=body, headers={"Content-Encoding": "gzip"})


@pytest.fixture
async def base() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_get("/sized", _sized)
    app.router.add_get("/chunked", _chunked)
    app.router.add_get("/compressed", _compressed)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def _read(url: str) -> tuple[bytes, bool]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return await http._read(response, LIMIT)


@pytest.mark.parametrize(
    ("path", "size", "expected"),
    [
        ("sized", 10, (b"x" * 10, False)),
        ("sized", LIMIT, (b"x" * LIMIT, False)),
        ("sized", LIMIT + 1, (b"x" * LIMIT, True)),
        ("sized", 0, (b"", False)),
        ("chunked", 500, (b"y" * 500, False)),
        ("chunked", 5000, (b"y" * LIMIT, True)),
        # Small on the wire, large once decompressed: capped as it is read.
        ("compressed", 50_000, (b"z" * LIMIT, True)),
        ("compressed", 100, (b"z" * 100, False)),
    ],
)
async def test_a_body_is_read_whole_or_capped(
    base: str, path: str, size: int, expected: tuple[bytes, bool]
) -> None:
    assert await _read(f"{base}/{path}?size={size}") == expected


async def test_a_body_of_declared_length_within_the_limit_is_read_at_once(
    base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunked: list[int] = []
    real = aiohttp.StreamReader.iter_chunked

    def counted(self: aiohttp.StreamReader, n: int) -> object:
        chunked.append(n)
        return real(self, n)

    monkeypatch.setattr(aiohttp.StreamReader, "iter_chunked", counted)
    assert await _read(f"{base}/sized?size=10") == (b"x" * 10, False)
    assert chunked == []
    assert await _read(f"{base}/chunked?size=500") == (b"y" * 500, False)
    assert await _read(f"{base}/compressed?size=100") == (b"z" * 100, False)
    assert len(chunked) == 2
