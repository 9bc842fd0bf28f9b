"""`/mcp` and MCP 2026-07-28 through the real server, over plain HTTP: `server/discover`,
cache hints on list results, the `Mcp-Method` / `Mcp-Name` headers checked against the
body, tools listed by name on every replica, configured icons, and JSON Schema 2020-12
schemas kept as they are (`$ref`, `$defs`) for clients that read them, inlined for older
clients."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import orjson
import pytest
import pytest_asyncio

from registry import Tool, ToolRegistry
from tests.conftest import Proxy, serve_proxy

pytestmark = pytest.mark.asyncio(loop_scope="module")

KEY = "key-a-000001"
ICON = {"src": "https://icons.example/geo.svg", "mime_type": "image/svg+xml", "sizes": ["any"]}
ADDRESS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


def registry() -> ToolRegistry:
    """Tools registered out of name order, one described by a 2020-12 schema with `$ref`."""
    tools = ToolRegistry()

    def zeta() -> str:
        """Last by name."""
        return "z"

    def alpha() -> str:
        """First by name."""
        return "a"

    def locate(name: str, address: dict[str, Any] | None = None) -> str:
        return f"{name} lives in {(address or {}).get('city', 'somewhere')}"

    tools.register(zeta, namespace="misc")
    tools.register(
        Tool("locate", "Where someone lives.", ADDRESS_SCHEMA, fn=locate, namespace="geo")
    )
    tools.register(alpha, namespace="misc")
    return tools


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def proxy() -> AsyncIterator[Proxy]:
    config = {
        "upstreams": [{"name": "demo", "base_url": "demo"}],
        "auth": {"keys": [{"name": "a", "key": KEY}]},
        "mcp_server": {"icons": {"geo": [ICON]}},
    }
    async with serve_proxy(config, registry()) as served:
        yield served


def mcp_url(proxy: Proxy) -> str:
    return f"{proxy.base_url.removesuffix('/v1')}/mcp"


async def post(
    proxy: Proxy, body: dict[str, Any], headers: dict[str, str]
) -> tuple[int, dict[str, Any]]:
    """One POST to /mcp; its status and JSON-RPC message (the last one of an SSE stream)."""
    base = {"authorization": f"Bearer {KEY}", "accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(mcp_url(proxy), json=body, headers={**base, **headers})
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [ln for ln in response.text.splitlines() if ln.startswith("data:")]
        return response.status_code, orjson.loads(data[-1].removeprefix("data:"))
    return response.status_code, orjson.loads(response.content) if response.content else {}


async def modern(
    proxy: Proxy,
    method: str,
    params: dict[str, Any] | None = None,
    capabilities: dict[str, Any] | None = None,
    **headers: str,
) -> tuple[int, dict[str, Any]]:
    """A 2026-07-28 request with the headers a conforming client sends (`headers` override
    them, `mcp_name=...` adds `Mcp-Name`)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }
    body = {"jsonrpc": "2.0", "id": 7, "method": method}
    body["params"] = {**(params or {}), "_meta": meta}
    sent = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
    sent.update({k.replace("_", "-"): v for k, v in headers.items()})
    return await post(proxy, body, sent)


async def handshake_tools(proxy: Proxy, version: str) -> list[dict[str, Any]]:
    """`tools/list` on a handshake session of protocol `version`."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    base = {"authorization": f"Bearer {KEY}", "accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=30, headers=base) as http:
        opened = await http.post(mcp_url(proxy), json=initialize)
        session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        session["mcp-protocol-version"] = version
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(mcp_url(proxy), json=done, headers=session)
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        listed = await http.post(mcp_url(proxy), json=listing, headers=session)
        await http.delete(mcp_url(proxy), headers=session)
    data = [ln for ln in listed.text.splitlines() if ln.startswith("data:")]
    message = orjson.loads(data[-1].removeprefix("data:")) if data else listed.json()
    return message["result"]["tools"]


async def test_server_discover_says_what_the_server_is(proxy: Proxy) -> None:
    status, answer = await modern(proxy, "server/discover")
    result = answer["result"]
    assert status == 200 and "2026-07-28" in result["supportedVersions"]
    assert result["capabilities"]["tools"] == {"listChanged": True}
    assert result["capabilities"]["extensions"] == {"io.modelcontextprotocol/tasks": {}}
    assert result["instructions"].startswith("Tools gathered behind a Toolwire proxy")
    assert (result["ttlMs"], result["cacheScope"]) == (300_000, "public")


async def test_tools_list_is_by_name_with_cache_hints_and_kept_refs(proxy: Proxy) -> None:
    status, answer = await modern(proxy, "tools/list")
    result = answer["result"]
    tools = {t["name"]: t for t in result["tools"]}
    assert status == 200 and list(tools) == ["geo_locate", "misc_alpha", "misc_zeta"]
    assert (result["ttlMs"], result["cacheScope"]) == (60_000, "private")
    assert tools["geo_locate"]["inputSchema"] == ADDRESS_SCHEMA


async def test_tools_show_their_configured_icons(proxy: Proxy) -> None:
    _, answer = await modern(proxy, "tools/list")
    tools = {t["name"]: t for t in answer["result"]["tools"]}
    assert tools["geo_locate"]["icons"] == [
        {"src": ICON["src"], "mimeType": "image/svg+xml", "sizes": ["any"]}
    ]
    assert "icons" not in tools["misc_alpha"]


async def test_a_handshake_client_reads_the_same_order_and_its_dialect(proxy: Proxy) -> None:
    current = {t["name"]: t for t in await handshake_tools(proxy, "2025-11-25")}
    older = {t["name"]: t for t in await handshake_tools(proxy, "2025-06-18")}
    assert list(current) == list(older) == ["geo_locate", "misc_alpha", "misc_zeta"]
    assert current["geo_locate"]["inputSchema"] == ADDRESS_SCHEMA
    inlined = older["geo_locate"]["inputSchema"]
    assert "$defs" not in inlined and inlined["properties"]["address"] == {
        "type": "object",
        "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
    }
    assert inlined["additionalProperties"] is False


async def test_a_call_with_kept_refs_runs(proxy: Proxy) -> None:
    arguments = {"name": "Ada", "address": {"city": "London"}}
    status, answer = await modern(
        proxy, "tools/call", {"name": "geo_locate", "arguments": arguments}, mcp_name="geo_locate"
    )
    assert status == 200
    assert answer["result"]["content"] == [{"type": "text", "text": "Ada lives in London"}]


@pytest.mark.parametrize(
    ("method", "params", "headers"),
    [
        ("tools/list", {}, {"mcp_method": "tools/call"}),
        ("tools/call", {"name": "misc_alpha", "arguments": {}}, {"mcp_name": "misc_zeta"}),
        ("tools/call", {"name": "misc_alpha", "arguments": {}}, {}),
        ("tasks/get", {"taskId": "abc"}, {"mcp_name": "another-task"}),
    ],
    ids=["method-mismatch", "name-mismatch", "name-missing", "task-name-mismatch"],
)
async def test_routing_headers_must_match_the_body(
    proxy: Proxy, method: str, params: dict[str, Any], headers: dict[str, str]
) -> None:
    tasks: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    status, answer = await modern(proxy, method, params, tasks, **headers)
    assert answer["error"]["code"] == -32020, answer
    assert status in (200, 400)
