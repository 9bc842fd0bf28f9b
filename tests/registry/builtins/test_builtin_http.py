from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import orjson
import pytest
from aiohttp import web

from registry import Executor, Tool, ToolCall, ToolResult
from registry.builtins import BuiltinOptions, builtin_tools


@pytest.fixture
async def server() -> AsyncIterator[str]:
    async def hello(_: web.Request) -> web.Response:
        return web.Response(text="hello")

    async def big(_: web.Request) -> web.Response:
        return web.Response(text="x" * 10_000)

    async def to_localhost(request: web.Request) -> web.Response:
        raise web.HTTPFound(f"http://localhost:{request.url.port}/hello")

    async def to_metadata(_: web.Request) -> web.Response:
        raise web.HTTPFound("http://169.254.169.254/latest/meta-data/")

    async def missing(_: web.Request) -> web.Response:
        return web.Response(status=404, text="no such page")

    app = web.Application()
    app.router.add_get("/hello", hello)
    app.router.add_get("/big", big)
    app.router.add_get("/to-localhost", to_localhost)
    app.router.add_get("/to-metadata", to_metadata)
    app.router.add_get("/missing", missing)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
def executor() -> Iterator[Executor]:
    with Executor(default_timeout_s=10) as ex:
        yield ex


def tools(**options: object) -> dict[str, Tool]:
    built = builtin_tools(BuiltinOptions(tools=["http"], **options))  # type: ignore[arg-type]
    return {t.qualified_name: t for t in built}


async def get(executor: Executor, url: str, **options: object) -> ToolResult:
    tool = tools(**options)["http.get"]
    return await executor.execute(
        tool, ToolCall("c1", "http_get", orjson.dumps({"url": url}).decode())
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:9/",
        "http://[::ffff:127.0.0.1]:9/",
        "http://10.1.2.3/",
        "http://192.168.0.1/",
        "http://localhost:9/",
        "http://[fd00:ec2::254]/",
    ],
)
async def test_private_targets_are_refused(executor: Executor, url: str) -> None:
    result = await get(executor, url)
    assert result.error_kind == "exception"
    assert "non-public address" in result.content


async def test_other_schemes_are_refused(executor: Executor) -> None:
    for url in ("file:///etc/passwd", "ftp://example.com/", "gopher://x/"):
        result = await get(executor, url)
        assert "only http and https" in result.content


async def test_an_allowed_host_is_fetched(executor: Executor, server: str) -> None:
    result = await get(executor, f"{server}/hello", http_allow_hosts=["127.0.0.1"])
    assert result.content.startswith("HTTP 200 OK\ncontent-type: text/plain")
    assert result.content.endswith("\nhello")


async def test_redirects_are_checked_again(executor: Executor, server: str) -> None:
    for path in ("/to-localhost", "/to-metadata"):
        result = await get(executor, f"{server}{path}", http_allow_hosts=["127.0.0.1"])
        assert result.is_error
        assert "refused" in result.content


async def test_bodies_are_capped_and_errors_are_tool_errors(
    executor: Executor, server: str
) -> None:
    big = await get(executor, f"{server}/big", http_allow_private=True, http_max_bytes=100)
    assert big.content.endswith("x" * 100 + "\n…[body truncated at 100 bytes]")
    missing = await get(executor, f"{server}/missing", http_allow_private=True)
    assert missing.error_kind == "tool_error"
    assert "HTTP 404 Not Found" in missing.content


def test_tags() -> None:
    built = tools()
    assert built["http.get"].metadata.tags == {"network", "read_only"}
    assert built["http.request"].metadata.tags == {"network"}
