"""W3C trace context on the requests tools send: an OpenAPI operation and MCP calls over
Streamable HTTP and SSE carry a `traceparent` naming their tool call's span, in the client's
trace; with tracing off they carry none."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from openai import AsyncOpenAI
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from proxy import create_app, parse_settings
from proxy.telemetry import Telemetry, Tracing
from testing import asgi_serving
from testing.mcp_servers import HttpTransport
from testing.openapi_service import ShopState, create_shop, serve_app
from testing.upstream import FakeUpstream, Reply
from tests.conftest import REPO

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
CALLS = [("shop_get_item", {"item_id": 1}), ("http_trace", {}), ("sse_trace", {})]


def _tracing_server() -> MCPServer:
    server = MCPServer("toolwire-test-trace")

    @server.tool()
    def trace(ctx: Context) -> str:
        """The traceparent header this call came with."""
        return (ctx.headers or {}).get("traceparent", "none")

    return server


@contextlib.asynccontextmanager
async def _serve(app: Any, path: str = "") -> AsyncIterator[str]:
    async with asgi_serving.serve_app(app, lifespan="auto", timeout_graceful_shutdown=1) as root:
        yield root + path


def _mcp(transport: HttpTransport) -> contextlib.AbstractAsyncContextManager[str]:
    server = _tracing_server()
    if transport == "sse":
        return _serve(server.sse_app(), "/sse")
    return _serve(server.streamable_http_app(), "/mcp")


@contextlib.asynccontextmanager
async def _proxy(upstream: FakeUpstream, tracing: Tracing | None) -> AsyncIterator[ShopState]:
    """The proxy with the shop service and the tracing MCP server over both HTTP transports;
    yields the shop's state, after one turn that called a tool of each."""
    shop = ShopState()
    upstream.script(Reply.tool_calls(CALLS), Reply.text("done"))
    async with (
        serve_app(create_shop(shop)) as shop_url,
        _mcp("streamable-http") as http_url,
        _mcp("sse") as sse_url,
    ):
        config = {
            "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
            "tools": [
                {"openapi": {"spec": f"{shop_url}/openapi.json"}, "namespace": "shop"},
                {"mcp": {"url": http_url}, "namespace": "http"},
                {"mcp": {"url": sse_url}, "namespace": "sse"},
            ],
        }
        settings = parse_settings(config, base_dir=REPO, environ={})
        app = create_app(settings, telemetry=Telemetry.from_settings(settings, tracing=tracing))
        async with _serve(app) as url:
            client = AsyncOpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0, timeout=30)
            async with client:
                answer = await client.chat.completions.create(
                    model="m",
                    messages=[{"role": "user", "content": "hi"}],
                    extra_headers={"traceparent": TRACEPARENT},
                )
        assert answer.choices[0].message.content == "done"
        yield shop


def _results(upstream: FakeUpstream) -> dict[str, str]:
    """The tool messages the upstream got back, by the tool called."""
    messages = upstream.requests[-1]["messages"]
    (assistant,) = [m for m in messages if m["role"] == "assistant"]
    names = {call["id"]: call["function"]["name"] for call in assistant["tool_calls"]}
    return {names[m["tool_call_id"]]: m["content"] for m in messages if m["role"] == "tool"}


async def test_tool_requests_carry_their_tool_calls_span(upstream: FakeUpstream) -> None:
    exporter = InMemorySpanExporter()
    async with _proxy(upstream, Tracing.to_exporter(exporter)) as shop:
        (received,) = [r for r in shop.received if r.path == "/items/1"]
    spans = {
        span.attributes["gen_ai.tool.name"]: span
        for span in exporter.get_finished_spans()
        if span.attributes and span.attributes.get("gen_ai.operation.name") == "execute_tool"
    }
    assert set(spans) == {"shop.get_item", "http.trace", "sse.trace"}
    results = _results(upstream)
    sent = {
        "shop.get_item": received.headers["traceparent"],
        "http.trace": results["http_trace"],
        "sse.trace": results["sse_trace"],
    }
    for tool, traceparent in sent.items():
        span_id = f"{spans[tool].context.span_id:016x}"
        assert traceparent == f"00-{TRACE_ID}-{span_id}-01", tool


async def test_no_trace_context_when_tracing_is_off(upstream: FakeUpstream) -> None:
    async with _proxy(upstream, None) as shop:
        (received,) = [r for r in shop.received if r.path == "/items/1"]
    assert "traceparent" not in received.headers
    results = _results(upstream)
    assert results["http_trace"] == results["sse_trace"] == "none"
