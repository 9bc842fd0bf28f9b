"""One conversation through the real proxy that uses every kind of tool source at once.

Python functions, a class's methods, the published time server over stdio, SDK-written MCP
servers over Streamable HTTP and over SSE, and an OpenAPI service: the model calls one tool
of each kind in one round of parallel calls, then two stateful ones in a second round.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from examples.tools import get_weather
from testing.mcp_servers import serve_http
from testing.openapi_service import ShopState, create_shop, serve_app
from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask, tool_names

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

DEADLINE_S = 45
LEDGER = '''
class Ledger:
    """A small ledger; its state lives in the one instance the source creates."""

    def __init__(self, currency: str = "USD") -> None:
        self.currency = currency
        self.entries: list[tuple[str, float]] = []

    def record(self, label: str, amount: float) -> dict:
        """Record an expense.

        Args:
            label: what was paid for.
            amount: how much.
        """
        self.entries.append((label, amount))
        return {"recorded": label, "entries": len(self.entries)}

    def balance(self) -> dict:
        """The total of every expense recorded so far."""
        total = sum(amount for _, amount in self.entries)
        return {"entries": len(self.entries), "total": total, "currency": self.currency}

    @staticmethod
    def vat(amount: float) -> float:
        """VAT on an amount.

        Args:
            amount: the net amount.
        """
        return round(amount * 0.2, 2)
'''

ROUND_ONE: list[tuple[str, dict[str, Any]]] = [
    ("demo_get_weather", {"city": "Paris"}),
    ("ledger_record", {"label": "kettle", "amount": 19.5}),
    ("time_get_current_time", {"timezone": "Asia/Tokyo"}),
    ("streamable_add", {"a": 2, "b": 40}),
    ("sse_echo", {"text": "hello over SSE"}),
    ("shop_update_item", {"item_id": 1, "reason": "sale", "price": 19.5}),
]
ROUND_TWO: list[tuple[str, dict[str, Any]]] = [
    ("ledger_balance", {}),
    ("shop_get_item", {"item_id": 1}),
]
ANSWER = "Paris is mild, the kettle is on sale and booked, and it is evening in Tokyo."


@dataclass
class Servers:
    """The running HTTP services the config points at."""

    streamable_url: str
    sse_url: str
    shop_url: str
    shop: ShopState

    @property
    def spec_url(self) -> str:
        return f"{self.shop_url}/openapi.json"


@pytest.fixture
async def servers() -> AsyncIterator[Servers]:
    """The demo MCP server over Streamable HTTP and over SSE, and the shop service."""
    state = ShopState()
    async with (
        serve_http("demo", "streamable-http") as streamable_url,
        serve_http("demo", "sse") as sse_url,
        serve_app(create_shop(state)) as shop_url,
    ):
        try:
            yield Servers(streamable_url, sse_url, shop_url, state)
        finally:
            state.released.set()


def tools_config(servers: Servers, ledger: Path) -> list[dict[str, Any]]:
    return [
        {"python": "examples/tools.py", "namespace": "demo"},
        {"python_class": f"{ledger}:Ledger", "init": {"currency": "EUR"}},
        {"mcp": {"command": ["python", "-m", "mcp_server_time"]}, "namespace": "time"},
        {"mcp": {"url": servers.streamable_url}, "namespace": "streamable"},
        {"mcp": {"url": servers.sse_url}, "namespace": "sse"},
        {"openapi": {"spec": servers.spec_url}, "namespace": "shop"},
    ]


def results_by_tool(body: dict[str, Any]) -> dict[str, str]:
    """The tool messages of the last round in an upstream request, keyed by the called tool."""
    messages = body["messages"]
    assistant = next(m for m in reversed(messages) if m["role"] == "assistant")
    names = {call["id"]: call["function"]["name"] for call in assistant["tool_calls"]}
    start = messages.index(assistant) + 1
    return {names[m["tool_call_id"]]: m["content"] for m in messages[start:] if m["role"] == "tool"}


async def readiness(base_url: str) -> dict[str, Any]:
    root = base_url.removesuffix("/v1")
    async with aiohttp.ClientSession() as session, session.get(f"{root}/readyz") as response:
        assert response.status == 200
        return await response.json()


async def test_one_conversation_uses_every_source_kind(
    make_proxy, upstream: FakeUpstream, servers: Servers, tmp_path: Path, stream: bool
) -> None:
    ledger = tmp_path / "ledger.py"
    ledger.write_text(LEDGER)
    upstream.script(
        Reply.tool_calls(ROUND_ONE, style="interleaved"),
        Reply.tool_calls(ROUND_TWO),
        Reply.text(ANSWER),
    )
    async with asyncio.timeout(DEADLINE_S):
        async with make_proxy(tools=tools_config(servers, ledger)) as proxy:
            out = await ask(
                proxy.client,
                stream=stream,
                messages=[{"role": "user", "content": "Weather, books, time and the kettle?"}],
            )
            ready = await readiness(proxy.base_url)

    assert out.content == ANSWER
    assert out.finish_reason == "stop"
    assert len(upstream.requests) == 3
    offered = set(tool_names(upstream.requests[0]))
    assert {name for name, _ in ROUND_ONE + ROUND_TWO} <= offered

    first = results_by_tool(upstream.requests[1])
    assert set(first) == {name for name, _ in ROUND_ONE}
    assert json.loads(first["demo_get_weather"]) == get_weather("Paris")
    assert json.loads(first["ledger_record"]) == {"recorded": "kettle", "entries": 1}
    tokyo = json.loads(first["time_get_current_time"])
    assert tokyo["timezone"] == "Asia/Tokyo"
    assert datetime.fromisoformat(tokyo["datetime"]).utcoffset() == timedelta(hours=9)
    assert first["streamable_add"] == "42"
    assert first["sse_echo"] == "hello over SSE"
    assert json.loads(first["shop_update_item"]) == {
        "id": 1,
        "name": "kettle",
        "price": 19.5,
        "tags": [],
        "reason": "sale",
    }
    (patch,) = [r for r in servers.shop.received if r.method == "PATCH"]
    assert (patch.path, patch.query, patch.body) == (
        "/items/1",
        [("reason", "sale")],
        {"price": 19.5},
    )

    second = results_by_tool(upstream.requests[2])
    assert json.loads(second["ledger_balance"]) == {"entries": 1, "total": 19.5, "currency": "EUR"}
    assert json.loads(second["shop_get_item"])["price"] == 19.5
    assert not any(content.startswith("Error") for content in [*first.values(), *second.values()])

    sources = {s["name"]: s for s in ready["sources"]}
    assert {name: (s["reachable"], s["tools"], s["error"]) for name, s in sources.items()} == {
        "python:examples/tools.py": (True, 4, None),
        f"python_class:{ledger}:Ledger": (True, 3, None),
        "mcp:time": (True, 2, None),
        "mcp:streamable": (True, 9, None),
        "mcp:sse": (True, 9, None),
        f"openapi:{servers.spec_url}": (True, 9, None),
    }
    assert ready["status"] == "ready"
    assert ready["tools"] == sum(s["tools"] for s in sources.values())
