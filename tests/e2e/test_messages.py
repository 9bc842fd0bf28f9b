"""The Anthropic Messages front over the real server, with the official anthropic SDK."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import anthropic
import pytest
from anthropic import AsyncAnthropic

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import tool_messages
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

MODEL = "fake-model"
CLOCK = {
    "name": "read_clock",
    "description": "The client's own clock.",
    "input_schema": {"type": "object", "properties": {"zone": {"type": "string"}}},
}


def client_for(proxy: Any, key: str = "unused") -> AsyncAnthropic:
    base = proxy.base_url.removesuffix("/v1")
    return AsyncAnthropic(base_url=base, api_key=key, max_retries=0, timeout=30)


async def create(client: AsyncAnthropic, *, stream: bool, **request: Any) -> Any:
    """The final message; a streamed one through the SDK's stream helper (Toolwire's own
    `toolwire` field, which rides on `message_delta`, copied onto it)."""
    request.setdefault("model", MODEL)
    request.setdefault("max_tokens", 256)
    if not stream:
        return await client.messages.create(**request)
    texts, vendor = [], None
    async with client.messages.stream(**request) as events:
        async for event in events:
            if event.type == "text":
                texts.append(event.text)
            elif event.type == "message_delta":
                vendor = (event.model_extra or {}).get("toolwire")
        final = await events.get_final_message()
    assert "".join(texts) == "".join(b.text for b in final.content if b.type == "text")
    if vendor is not None:
        final.__pydantic_extra__ = {**(final.model_extra or {}), "toolwire": vendor}
    return final


async def test_text_answer(make_proxy, upstream: FakeUpstream, stream: bool) -> None:
    upstream.script(Reply.text("Hello from the proxy."))
    async with make_proxy(registry_with()) as proxy, client_for(proxy) as client:
        message = await create(
            client,
            stream=stream,
            system="Be brief.",
            messages=[{"role": "user", "content": "hi"}],
            stop_sequences=["END"],
        )
    assert message.stop_reason == "end_turn"
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == "Hello from the proxy."
    assert message.usage.input_tokens == 10 and message.usage.output_tokens == 5
    sent = upstream.requests[0]
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    assert sent["max_tokens"] == 256 and sent["stop"] == ["END"]


async def test_server_rounds_are_hidden_and_client_tools_handed_back(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls([("t_get_weather", {"city": "Oslo"})]),
        Reply.tool_calls([("t_add", {"a": 2, "b": 3}), ("read_clock", {"zone": "UTC"})]),
        Reply.text("Oslo is sunny, 2 + 3 = 5, and it is noon."),
    )
    question = [{"role": "user", "content": "Oslo, 2+3, and the time?"}]
    async with make_proxy(registry_with()) as proxy, client_for(proxy) as client:
        first = await create(client, stream=stream, messages=question, tools=[CLOCK])
        assert first.stop_reason == "tool_use"
        (use,) = [b for b in first.content if b.type == "tool_use"]
        assert use.name == "read_clock" and use.input == {"zone": "UTC"}
        follow_up = [
            *question,
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "12:00"}],
            },
        ]
        second = await create(client, stream=stream, messages=follow_up, tools=[CLOCK])
    assert second.content[0].text == "Oslo is sunny, 2 + 3 = 5, and it is noon."
    assert first.usage.input_tokens == 20  # two upstream calls, summed
    last = upstream.requests[2]
    assert [m["role"] for m in last["messages"]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
    ]
    results = [m["content"] for m in tool_messages(last)]
    assert json.loads(results[0])["city"] == "Oslo" and set(results[1:]) == {"5", "12:00"}


async def test_approval_round_trip(make_proxy, upstream: FakeUpstream, stream: bool) -> None:
    policy = {"rules": [{"match": {"name": "t.add"}, "action": "ask", "reason": "sums"}]}
    upstream.script(Reply.tool_calls([("t_add", {"a": 1, "b": 1})]), Reply.text("2"))
    question = [{"role": "user", "content": "1+1"}]
    async with make_proxy(registry_with(), policy=policy) as proxy, client_for(proxy) as client:
        paused = await create(client, stream=stream, messages=question)
        (use,) = paused.content
        assert paused.stop_reason == "tool_use" and use.name == "t_add"
        assert paused.model_extra["toolwire"]["approval_required"][0]["reason"] == "sums"
        verdict = {"type": "tool_result", "tool_use_id": use.id, "content": '{"approve": true}'}
        answer = await create(
            client,
            stream=stream,
            messages=[
                *question,
                {"role": "assistant", "content": [use.model_dump()]},
                {"role": "user", "content": [verdict]},
            ],
        )
    assert answer.content[0].text == "2"
    assert tool_messages(upstream.requests[1])[0]["content"] == "2"


async def test_errors_have_anthropics_shape(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    async with make_proxy(registry_with()) as proxy, client_for(proxy) as client:
        body = {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "stream": stream}
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{proxy.base_url}/messages", json=body) as response,
        ):
            assert response.status == 400
            missing = await response.json()
        with pytest.raises(anthropic.BadRequestError):
            await create(
                client, stream=stream, model="", messages=[{"role": "user", "content": "x"}]
            )
        upstream.script(Reply.error(400, "prompt is too long"))
        with pytest.raises(anthropic.BadRequestError) as upstream_error:
            await create(client, stream=stream, messages=[{"role": "user", "content": "x"}])
    assert missing["type"] == "error"
    assert missing["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in missing["error"]["message"]
    assert "prompt is too long" in str(upstream_error.value)


async def test_keys_arrive_as_x_api_key_or_bearer(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    key = "team-key-0123456789"
    auth = {"keys": [{"name": "team", "key": key}]}
    upstream.script(Reply.text("ok"), Reply.text("ok"))
    async with make_proxy(registry_with(), auth=auth) as proxy:
        async with client_for(proxy, key) as client:  # the SDK sends x-api-key
            await create(client, stream=stream, messages=[{"role": "user", "content": "x"}])
        base = proxy.base_url.removesuffix("/v1")
        async with AsyncAnthropic(base_url=base, auth_token=key, max_retries=0) as bearer:
            await create(bearer, stream=stream, messages=[{"role": "user", "content": "x"}])
        async with client_for(proxy, "wrong-key-0123456789") as stranger:
            with pytest.raises(anthropic.AuthenticationError) as refused:
                await create(stranger, stream=stream, messages=[{"role": "user", "content": "x"}])
    assert refused.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    assert all("x-api-key" not in h and "authorization" not in h for h in upstream.headers)


async def test_count_tokens_needs_a_counting_upstream(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    async with make_proxy(registry_with()) as proxy, client_for(proxy) as client:
        with pytest.raises(anthropic.NotFoundError) as missing:
            await client.messages.count_tokens(
                model=MODEL, messages=[{"role": "user", "content": "x"}]
            )
    assert "count_tokens is not available" in str(missing.value)
