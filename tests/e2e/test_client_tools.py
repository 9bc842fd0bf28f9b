"""Client tools: returned, never run; a mixed turn keeps a complete history upstream."""

from __future__ import annotations

import json
import types

import pytest

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask, tool_messages, tool_names
from tests.e2e.tools import LOOKUP, registry_with

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

USER = [{"role": "user", "content": "Where is order 7, and the weather in Rome?"}]


async def test_client_tool_call_is_returned(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(Reply.tool_calls([("lookup_order", {"order_id": "7"})]))
    async with make_proxy(registry_with()) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER, tools=[LOOKUP])
    assert out.finish_reason == "tool_calls"
    (call,) = out.tool_calls
    assert call["function"]["name"] == "lookup_order"
    assert json.loads(call["function"]["arguments"]) == {"order_id": "7"}
    assert len(upstream.requests) == 1
    names = tool_names(upstream.requests[0])
    assert "lookup_order" in names and "t_get_weather" in names


async def test_mixed_turn_runs_own_returns_client_and_resumes(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 1, "b": 2})]),
        Reply.tool_calls(
            [("t_get_weather", {"city": "Rome"}), ("lookup_order", {"order_id": "7"})]
        ),
        Reply.text("Order 7 ships today; Rome is sunny."),
    )
    async with make_proxy(registry_with()) as proxy:
        first = await ask(proxy.client, stream=stream, messages=USER, tools=[LOOKUP])
        assert first.finish_reason == "tool_calls"
        assert [c["function"]["name"] for c in first.tool_calls] == ["lookup_order"]
        call = first.tool_calls[0]
        history = [
            *USER,
            {
                "role": "assistant",
                "content": first.content or None,
                "tool_calls": [
                    {"id": call["id"], "type": "function", "function": call["function"]}
                ],
            },
            {"role": "tool", "tool_call_id": call["id"], "content": "ships today"},
        ]
        second = await ask(proxy.client, stream=stream, messages=history, tools=[LOOKUP])
    assert second.content == "Order 7 ships today; Rome is sunny."
    sent = upstream.requests[2]["messages"]
    roles = [m["role"] for m in sent]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "tool"]
    calls = sent[3]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["t_get_weather", "lookup_order"]
    answered = {m["tool_call_id"]: m["content"] for m in tool_messages(upstream.requests[2])}
    assert set(answered) == {sent[1]["tool_calls"][0]["id"], *(c["id"] for c in calls)}
    assert answered[calls[1]["id"]] == "ships today"
    assert json.loads(answered[calls[0]["id"]])["city"] == "Rome"


async def test_client_tool_may_not_shadow_registry_tool(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    import openai

    shadow = {"type": "function", "function": {"name": "t_add", "parameters": {"type": "object"}}}
    async with make_proxy(registry_with()) as proxy:
        with pytest.raises(openai.BadRequestError) as caught:
            await ask(proxy.client, stream=stream, messages=USER, tools=[shadow])
    assert "t_add" in caught.value.message
    assert upstream.requests == []


async def test_auto_execute_false_returns_registry_calls(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(Reply.tool_calls([("t_add", {"a": 1, "b": 2})]))
    async with make_proxy(registry_with()) as proxy:
        out = await ask(
            proxy.client,
            stream=stream,
            messages=USER,
            extra_body={"toolwire": {"auto_execute": False}},
        )
    assert out.finish_reason == "tool_calls"
    assert out.tool_calls[0]["function"]["name"] == "t_add"
    assert len(upstream.requests) == 1


async def test_upstream_ids_that_repeat_never_mix_conversations(
    make_proxy, upstream: FakeUpstream, stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: servers that reuse ids (call_0) made one conversation's hidden turn
    splice into another's."""
    import testing.upstream as fake

    same = types.SimpleNamespace(hex="0" * 32)
    monkeypatch.setattr(fake, "uuid", types.SimpleNamespace(uuid4=lambda: same))

    def fixed_ids(body: dict) -> Reply:
        user = body["messages"][0]["content"]
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("done")
        b = 40 if "bob" in user else 1
        return Reply.tool_calls([("lookup_order", {"order_id": user}), ("t_add", {"a": b, "b": 2})])

    upstream.default = Reply.func(fixed_ids)
    async with make_proxy(registry_with()) as proxy:
        turns = {}
        for who in ("alice", "bob"):
            messages = [{"role": "user", "content": who}]
            out = await ask(proxy.client, stream=stream, messages=messages, tools=[LOOKUP])
            turns[who] = (messages, out.tool_calls[0])
        assert turns["alice"][1]["id"] != turns["bob"][1]["id"]
        messages, call = turns["alice"]
        history = [
            *messages,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call["id"], "type": "function", "function": call["function"]}
                ],
            },
            {"role": "tool", "tool_call_id": call["id"], "content": "shipped"},
        ]
        await ask(proxy.client, stream=stream, messages=history, tools=[LOOKUP])
    sent = upstream.requests[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "tool"] == ["3", "shipped"]


async def test_mixed_turn_with_attachments_keeps_tool_messages_together(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    from registry import ToolOutput

    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}

    async def snap(camera: str) -> ToolOutput:
        """Take a picture.

        Args:
            camera: which camera.
        """
        return ToolOutput("a picture", attachments=(image,))

    registry = registry_with()
    registry.register(snap, namespace="t")
    upstream.script(
        Reply.tool_calls([("t_snap", {"camera": "door"}), ("lookup_order", {"order_id": "7"})]),
        Reply.text("ok"),
    )
    async with make_proxy(registry) as proxy:
        first = await ask(proxy.client, stream=stream, messages=USER, tools=[LOOKUP])
        call = first.tool_calls[0]
        history = [
            *USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call["id"], "type": "function", "function": call["function"]}
                ],
            },
            {"role": "tool", "tool_call_id": call["id"], "content": "shipped"},
        ]
        await ask(proxy.client, stream=stream, messages=history, tools=[LOOKUP])
    sent = upstream.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "user"]
    assert sent[-1]["content"][1] == image
    assert all("toolwire_after_results" not in m for m in sent)
