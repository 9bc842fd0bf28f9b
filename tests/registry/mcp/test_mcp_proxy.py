"""MCP tools through the real proxy, with the OpenAI SDK as the client, streamed and not."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from testing.mcp_servers import stdio_command
from testing.upstream import FakeUpstream, Reply
from tests.conftest import Proxy, serve_proxy
from tests.e2e.answers import ask, tool_messages, tool_names

pytestmark = [
    pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"]),
    pytest.mark.asyncio(loop_scope="module"),
]

TOOLS = [
    {"mcp": {"command": ["python", "-m", "mcp_server_time"]}, "namespace": "time"},
    {"mcp": {"command": stdio_command("demo")}, "namespace": "demo"},
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served() -> AsyncIterator[tuple[Proxy, FakeUpstream]]:
    """One proxy and its two stdio servers for the file's tests (their tools keep no state):
    each server process costs ~0.7 s of CPU to start."""
    async with FakeUpstream() as upstream:
        upstream_config = {"name": "fake", "base_url": upstream.base_url, "models": ["*"]}
        async with serve_proxy({"upstreams": [upstream_config], "tools": TOOLS}) as proxy:
            yield proxy, upstream


@pytest.fixture
def proxy(served: tuple[Proxy, FakeUpstream]) -> Proxy:
    return served[0]


@pytest.fixture
def upstream(served: tuple[Proxy, FakeUpstream]) -> FakeUpstream:
    """The shared upstream, with no requests yet from this test."""
    served[1].requests.clear()
    return served[1]


async def test_the_model_calls_an_mcp_tool(proxy: Proxy, upstream: FakeUpstream, stream: bool):
    upstream.script(
        Reply.tool_calls([("time_get_current_time", {"timezone": "Asia/Tokyo"})]),
        Reply.text("It is late in Tokyo."),
    )
    out = await ask(proxy.client, stream=stream, messages=[{"role": "user", "content": "t?"}])

    assert out.content == "It is late in Tokyo."
    assert {"time_get_current_time", "demo_echo"} <= set(tool_names(upstream.requests[0]))
    (result,) = tool_messages(upstream.requests[1])
    assert json.loads(result["content"])["timezone"] == "Asia/Tokyo"


async def test_an_image_result_reaches_the_upstream(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
):
    upstream.script(Reply.tool_calls([("demo_picture", {})]), Reply.text("A tiny picture."))
    out = await ask(proxy.client, stream=stream, messages=[{"role": "user", "content": "p"}])

    assert out.content == "A tiny picture."
    messages = upstream.requests[1]["messages"]
    roles = [m["role"] for m in messages]
    assert roles[-2:] == ["tool", "user"]
    assert "image/png" in messages[-2]["content"]
    parts = messages[-1]["content"]
    images = [p for p in parts if p["type"] == "image_url"]
    assert images and images[0]["image_url"]["url"].startswith("data:image/png;base64,")
