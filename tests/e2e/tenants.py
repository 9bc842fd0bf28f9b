"""Two client keys on one proxy: a scripted model, a tool that records its runs, and the
clients of each key, for the tests that keep tenants apart."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from registry import ToolRegistry
from testing.upstream import Reply
from tests.conftest import Proxy
from tests.e2e import tools

MASTER = "master-key-0001"
KEY_A = "key-a-000001"
KEY_B = "key-b-000001"
AUTH = {
    "master_key": MASTER,
    "keys": [{"name": "a", "key": KEY_A}, {"name": "b", "key": KEY_B}],
}
ASK_WEATHER = {"rules": [{"match": {"name": "t.get_weather"}, "action": "ask"}]}
UNKNOWN = (
    "Error (denied): no approval is pending for this call (unknown, already used, or not issued)"
)
"""What the model reads for a verdict on a call no approval is pending for."""
WEATHER = {"type": "mcp", "server_label": "t"}
"""A Responses `mcp` tool entry for the test tools (every call asks, OpenAI's default)."""


def model(body: dict[str, Any]) -> Reply:
    """The scripted model: `weather <city>` calls `t_get_weather`, `add <a> <b>` calls
    `t_add`, `order <id> <a> <b>` calls `t_add` and the client's `lookup_order`; after tool
    results it repeats every result of the conversation, ` | ` between them (so a client
    reads what the model was told); anything else is echoed."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        told = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        return Reply.text(f"told: {' | '.join(told)}")
    words = _text(last.get("content")).split()
    if words[:1] == ["weather"]:
        return Reply.tool_calls([("t_get_weather", {"city": words[1]})])
    if words[:1] == ["add"]:
        return Reply.tool_calls([("t_add", {"a": int(words[1]), "b": int(words[2])})])
    if words[:1] == ["order"]:
        terms = {"a": int(words[2]), "b": int(words[3])}
        return Reply.tool_calls([("t_add", terms), ("lookup_order", {"order_id": words[1]})])
    return Reply.text(f"echo: {' '.join(words)}")


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def recording_registry(runs: list[str]) -> ToolRegistry:
    """The test tools, with `t.get_weather` appending each city it runs for to `runs`."""
    registry = tools.registry_with()
    registry.unregister("t.get_weather")

    def get_weather(city: str) -> dict[str, object]:
        """Current weather of a city.

        Args:
            city: the city's name.
        """
        runs.append(city)
        return tools.get_weather(city)

    registry.register(get_weather, namespace="t", tags=["read_only", "network"])
    return registry


@dataclass
class Tenants:
    """The clients of keys A, B and the master key on one proxy (or one per replica)."""

    proxy: Proxy
    a: AsyncOpenAI
    b: AsyncOpenAI
    master: AsyncOpenAI
    anthropic_a: AsyncAnthropic
    anthropic_b: AsyncAnthropic
    admin: httpx.AsyncClient
    """The admin API, opened with the master key."""
    runs: list[str] = field(default_factory=list)


@contextlib.asynccontextmanager
async def tenants_of(proxy: Proxy, runs: list[str]) -> AsyncIterator[Tenants]:
    """Clients of every key on `proxy`."""
    root = proxy.base_url.removesuffix("/v1")

    def openai_client(key: str) -> AsyncOpenAI:
        return AsyncOpenAI(base_url=proxy.base_url, api_key=key, max_retries=0, timeout=30)

    def anthropic_client(key: str) -> AsyncAnthropic:
        return AsyncAnthropic(base_url=root, api_key=key, max_retries=0, timeout=30)

    admin_headers = {"authorization": f"Bearer {MASTER}"}
    async with (
        openai_client(KEY_A) as a,
        openai_client(KEY_B) as b,
        openai_client(MASTER) as master,
        anthropic_client(KEY_A) as anthropic_a,
        anthropic_client(KEY_B) as anthropic_b,
        httpx.AsyncClient(timeout=60, base_url=f"{root}/admin/api", headers=admin_headers) as admin,
    ):
        yield Tenants(proxy, a, b, master, anthropic_a, anthropic_b, admin, runs)


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def answered(question: str, call: dict[str, Any], answer: Any) -> list[dict[str, Any]]:
    """The Chat history after the client answered its one paused call with `answer` (a
    verdict object, or text)."""
    content = answer if isinstance(answer, str) else json.dumps(answer)
    entry = {"id": call["id"], "type": "function", "function": call["function"]}
    return [
        *user(question),
        {"role": "assistant", "content": None, "tool_calls": [entry]},
        {"role": "tool", "tool_call_id": call["id"], "content": content},
    ]
