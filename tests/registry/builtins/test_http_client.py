"""The HTTP built-ins against a live service: redirects by hand, body caps, status, timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import aiohttp
import orjson
import pytest
from aiohttp import web

from registry import Executor, Tool, ToolCall, ToolResult
from registry.builtins import BuiltinOptions, builtin_tools
from registry.builtins import web as web_tools


@dataclass
class Service:
    url: str
    seen: list[tuple[str, str, str]] = field(default_factory=list)
    """(method, path, body) of each request, in order."""


SEEN = web.AppKey("seen", list)


async def _record(request: web.Request) -> None:
    request.app[SEEN].append((request.method, request.path, await request.text()))


async def _echo(request: web.Request) -> web.Response:
    await _record(request)
    return web.Response(text=f"{request.method} {await request.text()}".strip())


async def _moved(request: web.Request) -> web.Response:
    await _record(request)
    return web.Response(status=int(request.match_info["code"]), headers={"Location": "/echo"})


async def _created(request: web.Request) -> web.Response:
    await _record(request)
    return web.Response(status=201, text="made", headers={"Location": "/elsewhere"})


async def _bare_redirect(request: web.Request) -> web.Response:
    return web.Response(status=302, text="no location")


async def _loop(request: web.Request) -> web.Response:
    return web.Response(status=302, headers={"Location": "/loop"})


async def _sized(request: web.Request) -> web.Response:
    return web.Response(text="x" * int(request.match_info["n"]))


async def _status(request: web.Request) -> web.Response:
    return web.Response(status=int(request.match_info["code"]), text="status")


async def _empty(request: web.Request) -> web.Response:
    return web.Response(body=b"", headers={"Content-Type": "text/plain; charset=bogus"})


async def _endless(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/plain; charset=utf-8"})
    await response.prepare(request)
    while True:  # until the client goes away
        await response.write(b"y" * 65536)


async def _html(request: web.Request) -> web.Response:
    return web.Response(body=b"<p>" * 2000, headers={"Content-Type": "text/html"})


async def _stall(request: web.Request) -> web.Response:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


@pytest.fixture
async def service() -> AsyncIterator[Service]:
    app = web.Application()
    app[SEEN] = []
    app.router.add_route("*", "/echo", _echo)
    app.router.add_route("*", "/moved-{code}", _moved)
    app.router.add_post("/created", _created)
    app.router.add_get("/bare-redirect", _bare_redirect)
    app.router.add_get("/loop", _loop)
    app.router.add_get("/sized/{n}", _sized)
    app.router.add_get("/status/{code}", _status)
    app.router.add_get("/empty", _empty)
    app.router.add_get("/stall", _stall)
    app.router.add_get("/endless", _endless)
    app.router.add_get("/html", _html)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield Service(f"http://127.0.0.1:{port}", app[SEEN])
    finally:
        await runner.cleanup()


@pytest.fixture
def executor() -> Iterator[Executor]:
    with Executor(default_timeout_s=20) as ex:
        yield ex


def tools(**options: object) -> dict[str, Tool]:
    options = {"http_allow_private": True, **options}
    built = builtin_tools(BuiltinOptions(tools=["http"], **options))  # type: ignore[arg-type]
    return {t.qualified_name: t for t in built}


async def request(executor: Executor, method: str, url: str, **options: object) -> ToolResult:
    body = options.pop("body", None)
    arguments = {"method": method, "url": url, **({"body": body} if body else {})}
    call = ToolCall("c1", "http_request", orjson.dumps(arguments).decode())
    return await executor.execute(tools(**options)["http.request"], call)


async def get(executor: Executor, url: str, **options: object) -> ToolResult:
    call = ToolCall("c1", "http_get", orjson.dumps({"url": url}).decode())
    return await executor.execute(tools(**options)["http.get"], call)


def body_of(result: ToolResult) -> str:
    """The response body: what follows the status line and the kept headers."""
    return result.content.split("\n\n", 1)[1]


async def test_the_request_tool_sends_its_method_and_body(
    executor: Executor, service: Service
) -> None:
    result = await request(executor, "PUT", f"{service.url}/echo", body="payload")
    assert result.content.startswith("HTTP 200 OK") and body_of(result) == "PUT payload"
    assert service.seen == [("PUT", "/echo", "payload")]


@pytest.mark.parametrize(
    ("method", "status", "then"),
    [
        ("POST", 303, "GET"),
        ("PUT", 303, "GET"),
        ("POST", 302, "GET"),
        ("POST", 301, "GET"),
        ("POST", 307, "POST"),
        ("POST", 308, "POST"),
        ("PUT", 301, "PUT"),
        ("PUT", 302, "PUT"),
    ],
)
async def test_a_redirect_keeps_or_changes_the_method_as_browsers_do(
    executor: Executor, service: Service, method: str, status: int, then: str
) -> None:
    result = await request(executor, method, f"{service.url}/moved-{status}", body="data")
    kept = then == method
    assert body_of(result) == (f"{then} data" if kept else then)
    assert service.seen == [
        (method, f"/moved-{status}", "data"),
        (then, "/echo", "data" if kept else ""),
    ]


async def test_a_location_on_a_response_that_is_no_redirect_is_not_followed(
    executor: Executor, service: Service
) -> None:
    result = await request(executor, "POST", f"{service.url}/created", body="x")
    assert result.content.startswith("HTTP 201 Created")
    assert "location: /elsewhere" in result.content and body_of(result) == "made"
    assert [path for _, path, _ in service.seen] == ["/created"]


async def test_a_redirect_without_a_location_is_the_answer(
    executor: Executor, service: Service
) -> None:
    result = await get(executor, f"{service.url}/bare-redirect")
    assert result.content.startswith("HTTP 302 Found") and body_of(result) == "no location"
    assert not result.is_error


@pytest.mark.parametrize("max_redirects", [0, 2])
async def test_too_many_redirects_is_an_error(
    executor: Executor, service: Service, max_redirects: int
) -> None:
    result = await get(executor, f"{service.url}/loop", http_max_redirects=max_redirects)
    assert result.is_error
    assert result.content == f"Error (exception): ValueError: more than {max_redirects} redirects"


@pytest.mark.parametrize(("size", "cut"), [(99, False), (100, False), (101, True), (10_000, True)])
async def test_a_body_is_cut_at_max_bytes_exactly(
    executor: Executor, service: Service, size: int, cut: bool
) -> None:
    result = await get(executor, f"{service.url}/sized/{size}", http_max_bytes=100)
    marker = "\n…[body truncated at 100 bytes]"
    expected = "x" * min(size, 100) + (marker if cut else "")
    assert body_of(result) == expected


@pytest.mark.timeout(10)
async def test_an_endless_body_stops_being_read_at_the_cap(service: Service) -> None:
    with Executor(default_timeout_s=5) as executor:
        result = await get(executor, f"{service.url}/endless", http_max_bytes=1000)
    assert body_of(result) == "y" * 1000 + "\n…[body truncated at 1000 bytes]"


async def test_a_cut_body_without_a_charset_is_returned_cut(
    executor: Executor, service: Service
) -> None:
    result = await get(executor, f"{service.url}/html", http_max_bytes=9)
    assert not result.is_error
    assert body_of(result) == "<p><p><p>\n…[body truncated at 9 bytes]"


@pytest.mark.parametrize(("code", "error"), [(200, False), (399, False), (400, True), (503, True)])
async def test_a_status_from_400_on_is_a_tool_error(
    executor: Executor, service: Service, code: int, error: bool
) -> None:
    result = await get(executor, f"{service.url}/status/{code}")
    assert result.is_error is error
    assert f"HTTP {code}" in result.content


async def test_an_empty_body_needs_no_encoding(executor: Executor, service: Service) -> None:
    result = await get(executor, f"{service.url}/empty")
    assert result.content.startswith("HTTP 200 OK") and body_of(result) == ""


@pytest.mark.parametrize("url", ["http://[::1", "http://[zz]/"])
async def test_a_malformed_url_is_refused(executor: Executor, url: str) -> None:
    result = await get(executor, url)
    assert result.content == f"Error (exception): ValueError: not a URL: {url!r}"


@pytest.mark.timeout(10)
async def test_a_stalled_service_is_cut_off_by_the_clients_own_timeout(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web_tools, "_TIMEOUT", aiohttp.ClientTimeout(total=0.5))
    with Executor(default_timeout_s=5) as executor:
        result = await get(executor, f"{service.url}/stall")
    # The client's own timeout, not the executor's: without it this is a timeout at 5 s.
    assert result.error_kind == "exception" and "TimeoutError" in result.content
