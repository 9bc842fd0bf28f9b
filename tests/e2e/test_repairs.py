"""Small models' slips: tool names off by case or separator, client-call arguments."""

from __future__ import annotations

import json

import pytest

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask, tool_messages
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

USER = [{"role": "user", "content": "add 2 and 3"}]
ORDER = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "integer"}, "items": {"type": "array"}},
        },
    },
}


async def test_tool_name_off_by_case_and_separator_is_repaired(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(Reply.tool_calls([("T-Add", {"a": 2, "b": 3})]), Reply.text("5"))
    async with make_proxy(registry_with()) as proxy:
        await ask(proxy.client, stream=stream, messages=USER)
    sent = upstream.requests[1]["messages"]
    assert sent[1]["tool_calls"][0]["function"]["name"] == "t_add"
    assert tool_messages(upstream.requests[1])[0]["content"] == "5"


async def test_strict_mode_does_not_repair_names(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(Reply.tool_calls([("T-Add", {"a": 2, "b": 3})]), Reply.text("?"))
    async with make_proxy(registry_with(), execution={"strict_arguments": True}) as proxy:
        await ask(proxy.client, stream=stream, messages=USER)
    assert tool_messages(upstream.requests[1])[0]["content"].startswith("Error (unknown_tool)")


async def test_client_call_arguments_repaired_when_asked(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    sloppy = {"Order-ID": "7", "items": '["a", "b"]'}
    upstream.script(Reply.tool_calls([("lookup_order", sloppy)]))
    async with make_proxy(registry_with(), loop={"repair_client_calls": True}) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER, tools=[ORDER])
    (call,) = out.tool_calls
    assert json.loads(call["function"]["arguments"]) == {"order_id": 7, "items": ["a", "b"]}


async def test_client_call_arguments_untouched_by_default(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    sloppy = {"Order-ID": "7"}
    upstream.script(Reply.tool_calls([("lookup_order", sloppy)]))
    async with make_proxy(registry_with()) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER, tools=[ORDER])
    assert json.loads(out.tool_calls[0]["function"]["arguments"]) == sloppy
