"""The hosted APIs' tool search answered by Toolwire's own for any upstream: a client's
deferred function tool (`defer_loading`) is not offered until the model's `tool_search` finds
it, the search shows as `tool_search_call` and `tool_search_output` items, and the found tool's
call goes back to the client. On the Messages front the search shows as Anthropic's
`server_tool_use` and `tool_search_tool_result` blocks (with `tool_reference`s). Through the
real server with the openai SDK's beta Responses client and the anthropic SDK, streamed and
not."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic import AsyncAnthropic

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import tool_names
from tests.e2e.responses_client import beta_respond
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

TOOLS = [
    {"type": "tool_search"},
    {
        "type": "function",
        "name": "lookup_order",
        "description": "Find an order by its id.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        "defer_loading": True,
    },
]


async def _create(client: Any, stream: bool, **request: Any) -> Any:
    return await beta_respond(
        client, stream=stream, **{"model": "fake-model", "tools": TOOLS, **request}
    )


async def test_a_deferred_client_tool_is_found_then_called(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls([("tool_search", {"query": "find order"})]),
        Reply.tool_calls([("lookup_order", {"order_id": "7"})]),
    )
    async with make_proxy(registry_with()) as proxy:
        response = await _create(proxy.client, stream, input="Where is order 7?")
    searched, found, call = (item.model_dump(exclude_none=True) for item in response.output)
    assert searched["type"] == "tool_search_call" and searched["execution"] == "server"
    assert searched["arguments"] == {"query": "find order"}
    assert found["type"] == "tool_search_output" and found["call_id"] == searched["call_id"]
    assert [t["name"] for t in found["tools"]] == ["lookup_order"]
    assert call["type"] == "function_call" and call["name"] == "lookup_order"
    assert json.loads(call["arguments"]) == {"order_id": "7"}
    first, second = upstream.requests
    assert "lookup_order" not in tool_names(first) and "tool_search" in tool_names(first)
    assert "lookup_order" in tool_names(second)
    assert all("defer_loading" not in t for t in first["tools"] + second["tools"])


ANTHROPIC_TOOLS = [
    {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
    {
        "name": "lookup_order",
        "description": "Find an order by its id.",
        "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        "defer_loading": True,
    },
]


async def test_the_messages_front_shows_the_search_as_anthropics_blocks(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls([("tool_search", {"query": "find order"})]),
        Reply.tool_calls([("lookup_order", {"order_id": "7"})]),
    )
    request = {
        "model": "fake-model",
        "max_tokens": 256,
        "tools": ANTHROPIC_TOOLS,
        "messages": [{"role": "user", "content": "Where is order 7?"}],
    }
    async with make_proxy(registry_with()) as proxy:
        base = proxy.base_url.removesuffix("/v1")
        async with AsyncAnthropic(base_url=base, api_key="-", max_retries=0) as client:
            if stream:
                async with client.messages.stream(**request) as events:
                    message = await events.get_final_message()
            else:
                message = await client.messages.create(**request)
    server, result, use = message.content
    assert (server.type, server.name, server.input) == (
        "server_tool_use",
        "tool_search_tool_regex",
        {"query": "find order"},
    )
    assert result.type == "tool_search_tool_result" and result.tool_use_id == server.id
    assert [r.tool_name for r in result.content.tool_references] == ["lookup_order"]
    assert (use.type, use.name, use.input) == ("tool_use", "lookup_order", {"order_id": "7"})
    assert message.stop_reason == "tool_use"
    first, second = upstream.requests
    assert "lookup_order" not in tool_names(first) and "lookup_order" in tool_names(second)


async def test_a_namespace_tools_function_is_called_by_its_namespace(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    crm = {
        "type": "namespace",
        "name": "crm",
        "description": "The customer records.",
        "tools": [
            {
                "type": "function",
                "name": "find_customer",
                "description": "Find a customer by name.",
                "parameters": {"type": "object", "properties": {"name": {"type": "string"}}},
            }
        ],
    }
    upstream.script(
        Reply.tool_calls([("crm__find_customer", {"name": "Ada"})]), Reply.text("Ada is 7.")
    )
    async with make_proxy(registry_with()) as proxy:
        first = await _create(proxy.client, stream, input="Find Ada", tools=[crm])
        (call,) = (item.model_dump(exclude_none=True) for item in first.output)
        assert (call["namespace"], call["name"]) == ("crm", "find_customer")
        output = {"type": "function_call_output", "call_id": call["call_id"], "output": "7"}
        asked = {"role": "user", "content": "Find Ada"}
        second = await _create(proxy.client, stream, input=[asked, call, output], tools=[crm])
    texts = [c.text for item in second.output if item.type == "message" for c in item.content]
    assert texts == ["Ada is 7."]
    assert "crm__find_customer" in tool_names(upstream.requests[0])
    sent = upstream.requests[1]["messages"]
    assert sent[1]["tool_calls"][0]["function"]["name"] == "crm__find_customer"
