"""The Anthropic Messages front's history rules through the real server, with the official
anthropic SDK: a `tool_result` answers a `tool_use` of the assistant turn just before it,
as Anthropic requires; one answering an earlier turn is refused in Anthropic's shape."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import pytest
import pytest_asyncio
from anthropic import AsyncAnthropic

from testing.upstream import FakeUpstream, Reply
from tests.conftest import Proxy, serve_proxy
from tests.e2e.answers import tool_messages
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = "fake-model"
CLOCK = {
    "name": "read_clock",
    "description": "The client's own clock.",
    "input_schema": {"type": "object", "properties": {}},
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as fake:
        yield fake


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def proxy(upstream: FakeUpstream) -> AsyncIterator[Proxy]:
    config = {"upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}]}
    async with serve_proxy(config, registry_with()) as served:
        yield served


def _use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "read_clock", "input": {}}


def _result(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": text}


def _history(*last: dict[str, Any], between: dict[str, Any] | None = None) -> list[Any]:
    """A first clock round answered, then the assistant turn `between` (a second tool_use
    by default), then a user turn of the blocks `last`."""
    return [
        {"role": "user", "content": "time?"},
        {"role": "assistant", "content": [_use("toolu_1")]},
        {"role": "user", "content": [_result("toolu_1", "11:00")]},
        {"role": "assistant", "content": [between or _use("toolu_2")]},
        {"role": "user", "content": list(last)},
    ]


async def _send(proxy: Proxy, messages: list[Any], *, stream: bool) -> Any:
    base = proxy.base_url.removesuffix("/v1")
    request: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 64,
        "messages": messages,
        "tools": [CLOCK],
    }
    async with AsyncAnthropic(base_url=base, api_key="unused", max_retries=0) as client:
        if not stream:
            return await client.messages.create(**request)
        async with client.messages.stream(**request) as events:
            return await events.get_final_message()


async def test_a_tool_result_answers_only_the_turn_just_before_it(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    start = len(upstream.requests)
    stale_beside_fresh = _history(_result("toolu_1", "11:00"), _result("toolu_2", "12:00"))
    stale_after_text = _history(
        _result("toolu_1", "11:00"), between={"type": "text", "text": "It is 11:00."}
    )
    for stream, messages in ((False, stale_beside_fresh), (True, stale_after_text)):
        with pytest.raises(anthropic.BadRequestError) as refused:
            await _send(proxy, messages, stream=stream)
        body = refused.value.body
        assert isinstance(body, dict) and body["type"] == "error"
        assert body["error"]["type"] == "invalid_request_error"
        assert body["error"]["message"].startswith("messages.4.content.0: tool_result block")
    assert upstream.requests[start:] == []
    upstream.script(Reply.text("It is noon."))
    answer = await _send(proxy, _history(_result("toolu_2", "12:00")), stream=False)
    assert [b.text for b in answer.content if b.type == "text"] == ["It is noon."]
    (sent,) = upstream.requests[start:]
    assert [m["content"] for m in tool_messages(sent)] == ["11:00", "12:00"]
