"""The Responses front's `mcp` entries and stored conversations through the real server:
`allowed_tools` narrows what the model is offered, hidden tool rounds are kept for a
follow-up, and a failed `mcp_call` stays a failure when it is sent back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from testing.upstream import FakeUpstream, Reply
from tests.conftest import Proxy, serve_proxy
from tests.e2e.answers import tool_messages, tool_names
from tests.e2e.responses_client import items, respond
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = "fake-model"


def _entry(**fields: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": "t", "require_approval": "never", **fields}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as fake:
        yield fake


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def proxy(upstream: FakeUpstream) -> AsyncIterator[Proxy]:
    config = {"upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}]}
    async with serve_proxy(config, registry_with()) as served:
        yield served


@pytest.mark.parametrize(
    ("allowed", "offered"),
    [
        (["add"], {"t_add"}),
        ({"tool_names": ["t.explode", "t_nap"]}, {"t_explode", "t_nap"}),
        ({"read_only": True}, {"t_get_weather", "t_add"}),
        ({"tool_names": ["slow"], "read_only": True}, {"t_get_weather", "t_add", "t_slow"}),
    ],
    ids=["list", "names", "read-only", "names-or-read-only"],
)
async def test_allowed_tools_narrow_what_the_model_is_offered(
    proxy: Proxy, upstream: FakeUpstream, allowed: Any, offered: set[str]
) -> None:
    start = len(upstream.requests)
    upstream.script(Reply.text("ok"))
    response = await respond(
        proxy.client, stream=False, model=MODEL, input="hi", tools=[_entry(allowed_tools=allowed)]
    )
    (listing,) = items(response, "mcp_list_tools")
    assert {t.name for t in listing.tools} == offered
    (sent,) = upstream.requests[start:]
    assert set(tool_names(sent)) == offered


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_hidden_tool_rounds_reach_the_upstream_in_a_follow_up(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
) -> None:
    start = len(upstream.requests)
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 2, "b": 3})]),
        Reply.text("2 + 3 = 5."),
        Reply.text("Still 5."),
    )
    first = await respond(proxy.client, stream=stream, model=MODEL, input="2 + 3?")
    assert [item.type for item in first.output] == ["message"]
    await respond(
        proxy.client, stream=stream, model=MODEL, input="sure?", previous_response_id=first.id
    )
    follow_up = upstream.requests[start + 2]["messages"]
    assert [m["role"] for m in follow_up] == ["user", "assistant", "tool", "assistant", "user"]
    (call,) = follow_up[1]["tool_calls"]
    assert call["function"]["name"] == "t_add"
    assert follow_up[2] == {"role": "tool", "tool_call_id": call["id"], "content": "5"}
    assert follow_up[3]["content"] == "2 + 3 = 5."


async def test_a_failed_mcp_call_is_sent_back_as_a_failure(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    start = len(upstream.requests)
    upstream.script(
        Reply.tool_calls([("t_explode", {"reason": "disk"})]),
        Reply.text("It failed."),
        Reply.text("Stored."),
        Reply.text("Inline."),
    )
    tools = [_entry()]
    first = await respond(proxy.client, stream=True, model=MODEL, input="go", tools=tools)
    (call,) = items(first, "mcp_call")
    assert call.status == "failed" and call.output is None
    assert "boom: disk" in call.error.content[0]["text"]
    await respond(
        proxy.client,
        stream=False,
        model=MODEL,
        input="again",
        tools=tools,
        previous_response_id=first.id,
    )
    inline = [
        {"role": "user", "content": "go"},
        call.model_dump(),
        {"role": "user", "content": "x"},
    ]
    await respond(proxy.client, stream=False, model=MODEL, input=inline, tools=tools)
    seen, stored, inlined = (
        tool_messages(upstream.requests[start + i])[0]["content"] for i in (1, 2, 3)
    )
    assert seen.startswith("Error") and "boom: disk" in seen
    # Sent back, stored or inline, the failure is what the model saw the first time.
    assert stored == inlined == seen
