"""The edge: its parts in order (context, drain, telemetry, auth, the router), what each one
lets through, and every route of the table reachable through all of them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from proxy import create_app, parse_settings
from proxy.server.app import ToolwireApp
from proxy.server.dispatch import Router
from proxy.server.middleware import Edge
from proxy.server.routes import ROUTES
from proxy.telemetry import Telemetry
from proxy.telemetry.logs import RequestIdFilter
from testing.asgi_serving import serve_app
from testing.waiting import until
from tests.conftest import REPO

KEYS = {"master_key": "master-key-1", "keys": [{"name": "team", "key": "team-key-1"}]}
TEAM = {"authorization": "Bearer team-key-1"}
MASTER = {"authorization": "Bearer master-key-1"}


def _app(*, auth: bool = False, draining: bool = False) -> ToolwireApp:
    config: dict[str, Any] = {
        "upstreams": [{"name": "default", "base_url": "demo"}],
        "mcp_server": {"enabled": True},
        "admin": {"enabled": True, "key": "admin-key-1"},
    }
    if auth:
        config["auth"] = KEYS
    settings = parse_settings(config, base_dir=REPO, environ={})
    telemetry = Telemetry.from_settings(settings)
    if draining:
        telemetry.drain.begin()
    return create_app(settings, telemetry=telemetry)


@contextlib.asynccontextmanager
async def _served(app: ToolwireApp) -> AsyncIterator[tuple[str, aiohttp.ClientSession]]:
    async with serve_app(app) as root, aiohttp.ClientSession() as session:
        yield root, session


async def _ask(
    session: aiohttp.ClientSession, method: str, url: str, **options: Any
) -> tuple[int, Any, Any]:
    async with session.request(method, url, allow_redirects=False, **options) as response:
        json = response.content_type == "application/json"
        body = await response.json() if json else await response.text()
        return response.status, response.headers.copy(), body


def _requests(exposition: str, front: str, status: int) -> float:
    prefix = "toolwire_requests_total{"
    for line in exposition.splitlines():
        if line.startswith(prefix) and f'front="{front}"' in line and f'status="{status}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_the_edge_is_one_callable_around_the_router() -> None:
    # Context, drain, telemetry and key check run in one frame, in that order (the tests
    # below show each part's place by what it lets through), then the router.
    app = _app()
    assert isinstance(app, Edge) and type(app).__call__ is Edge.__call__
    assert isinstance(app.router, Router)


async def test_every_route_in_the_table_is_reachable_and_counted_by_its_label() -> None:
    answered = []
    async with _served(_app()) as (root, session):
        for route in ROUTES:
            path = route.path.replace("{response_id}", "resp_1") + ("/" if route.subtree else "")
            method = route.methods[0] if route.methods else "GET"
            options = {"json": {}} if method == "POST" else {}
            status, _, body = await _ask(session, method, root + path, **options)
            refused_by_router = status == 404 and "no route" in str(body)
            assert not refused_by_router and status != 405, (route.path, status, body)
            answered.append((route, status))
        exposition = ""

        async def all_counted() -> bool:
            # A request is counted when its app returns, which may be just after its
            # response reached the client (an app that awaits more after its last send).
            nonlocal exposition
            async with session.get(root + "/metrics") as response:
                exposition = await response.text()
            return all(_requests(exposition, r.label, status) >= 1 for r, status in answered)

        with contextlib.suppress(TimeoutError):
            await until(all_counted, deadline_s=10)
    for route, status in answered:
        assert _requests(exposition, route.label, status) >= 1, (route.path, status)


async def test_a_missing_key_is_refused_after_the_context_and_inside_the_telemetry() -> None:
    async with _served(_app(auth=True)) as (root, session):
        headers = {"x-request-id": "edge-1"}
        status, answer, body = await _ask(session, "POST", f"{root}/v1/messages", headers=headers)
        assert status == 401 and answer["x-request-id"] == "edge-1"
        assert body["type"] == "error" and body["error"]["type"] == "authentication_error"
        async with session.get(f"{root}/metrics", headers=MASTER) as response:
            assert _requests(await response.text(), "messages", 401) == 1


async def test_the_key_is_checked_before_the_router_answers() -> None:
    async with _served(_app(auth=True)) as (root, session):
        status, _, _ = await _ask(session, "GET", f"{root}/v1/chat/completions")
        assert status == 401
        status, answer, body = await _ask(
            session, "GET", f"{root}/v1/chat/completions", headers=TEAM
        )
        assert status == 405 and answer["allow"] == "POST"
        assert body["error"]["code"] == "method_not_allowed"
        # A wrong base URL is told so before the key: the key may be right, the path is not.
        status, _, body = await _ask(session, "POST", f"{root}/chat/completions", json={})
        assert status == 404 and "did you mean /v1/chat/completions?" in body["error"]["message"]
        for path in ("/", "/healthz", "/admin/"):
            status, _, _ = await _ask(session, "GET", root + path)
            assert status == 200, path


async def test_a_draining_server_refuses_before_the_key_check_and_counts_the_refusal() -> None:
    async with _served(_app(auth=True, draining=True)) as (root, session):
        headers = {"x-request-id": "edge-2"}
        status, answer, body = await _ask(
            session, "POST", f"{root}/v1/chat/completions", headers=headers, json={}
        )
        assert status == 503 and answer["x-request-id"] == "edge-2"
        assert answer["connection"] == "close" and body["error"]["code"] == "shutting_down"
        status, _, body = await _ask(session, "GET", f"{root}/readyz")
        assert (status, body) == (503, {"status": "draining"})
        status, _, _ = await _ask(session, "GET", f"{root}/healthz")
        assert status == 200
        async with session.get(f"{root}/metrics", headers=MASTER) as response:
            exposition = await response.text()
    assert _requests(exposition, "chat", 503) == 1
    assert _requests(exposition, "readyz", 503) == 1


async def test_under_the_servers_protocol_the_edge_is_no_frame_and_ends_in_the_requests_context(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The protocol begins the request (`Edge.begin_request`), runs the router's coroutine as
    the task, then the end: the summary line, in the request's context (its id on the line)."""
    caplog.set_level(logging.DEBUG, logger="toolwire.requests")
    caplog.handler.addFilter(RequestIdFilter())
    app = _app()
    tasks: list[asyncio.Task[Any] | None] = []
    inner = app._route

    def route(scope: Any, receive: Any, send: Any) -> Any:
        if scope["type"] == "http":
            tasks.append(asyncio.current_task())
        return inner(scope, receive, send)

    app._route = route
    async with _served(app) as (root, session):
        status, _, _ = await _ask(
            session, "GET", f"{root}/healthz", headers={"x-request-id": "edge-3"}
        )
        assert status == 200
        await until(lambda: bool(_summaries(caplog)), deadline_s=5)
    assert tasks == [None]  # the router was called as the request began, before its task ran
    assert [r.request_id for r in _summaries(caplog)] == ["edge-3"]  # type: ignore[attr-defined]
    assert app._drain._running == 0


async def test_an_edge_under_another_server_is_one_frame_that_ends_the_request() -> None:
    app = _app()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": []}
    scope |= {"query_string": b"", "scheme": "http", "server": None, "client": None}
    await app(scope, receive, send)  # no handlers before the lifespan: the front's 503
    assert sent[0]["status"] == 503 and app._drain._running == 0


def _summaries(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "toolwire.requests"]
