"""OpenAPI calls never follow redirects: a 3xx is reported to the model, its target untouched."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from registry import Executor, OpenApiSource, OpenApiSourceConfig, ToolCall, ToolRegistry


def _spec(base: str) -> dict[str, Any]:
    ok = {"200": {"description": "ok"}}
    body = {"content": {"application/json": {"schema": {"type": "object"}}}}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Moves", "version": "1"},
        "servers": [{"url": base}],
        "paths": {
            "/moved": {"get": {"operationId": "moved", "responses": ok}},
            "/moved-post": {
                "post": {"operationId": "moved_post", "requestBody": body, "responses": ok}
            },
        },
    }


@pytest.fixture
async def service() -> AsyncIterator[tuple[str, list[str]]]:
    """A service whose operations redirect to /target; yields its URL and the target's hits."""
    hits: list[str] = []

    async def spec(request: web.Request) -> web.Response:
        return web.json_response(_spec(f"http://127.0.0.1:{request.url.port}"))

    async def moved(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": "/target"})

    async def moved_post(request: web.Request) -> web.Response:
        return web.Response(status=307, headers={"Location": "/target"})

    async def target(request: web.Request) -> web.Response:
        hits.append(request.method)
        return web.json_response({"secret": "followed"})

    app = web.Application()
    app.router.add_get("/openapi.json", spec)
    app.router.add_get("/moved", moved)
    app.router.add_post("/moved-post", moved_post)
    app.router.add_route("*", "/target", target)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", hits
    finally:
        await runner.cleanup()


@pytest.mark.timeout(15)
@pytest.mark.parametrize(
    ("name", "arguments", "status"),
    [("moves.moved", {}, "302"), ("moves.moved_post", {"body": {"a": 1}}, "307")],
)
async def test_a_redirect_is_reported_and_never_followed(
    service: tuple[str, list[str]], name: str, arguments: dict[str, Any], status: str
) -> None:
    url, hits = service
    config = OpenApiSourceConfig.model_validate(
        {"openapi": {"spec": f"{url}/openapi.json", "allow_private": True}, "namespace": "moves"}
    )
    registry = ToolRegistry()
    source = OpenApiSource(config, base_dir=Path("."), environ={})
    await source.start(registry)
    try:
        with Executor(default_timeout_s=5) as executor:
            tool = registry.get_tool(name)
            result = await executor.execute(tool, ToolCall("c1", name, json.dumps(arguments)))
    finally:
        await source.aclose()
    assert result.is_error
    assert result.content.startswith(f"Error (tool_error): HTTP {status} ")
    assert result.content.endswith(": redirected to /target; redirects are not followed")
    assert hits == []
