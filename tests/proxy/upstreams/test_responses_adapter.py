"""ResponsesUpstream against the Responses fake: conversion both ways, usage, errors."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

import pytest

from proxy.config import UpstreamConfig
from proxy.errors import UpstreamError, UpstreamStatusError
from proxy.upstreams import ResponsesUpstream
from testing.responses_upstream import FakeResponses, Reply
from tests.proxy.upstreams.helpers import answer_of, chat, history

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])


@contextlib.asynccontextmanager
async def served(*replies: Reply) -> AsyncIterator[tuple[FakeResponses, ResponsesUpstream]]:
    async with FakeResponses() as fake:
        fake.script(*replies)
        config = UpstreamConfig(
            name="resp", base_url=fake.base_url, api_key="sk-x", format="openai-responses"
        )
        upstream = ResponsesUpstream(config)
        try:
            yield fake, upstream
        finally:
            await upstream.aclose()


async def test_text_usage_and_flat_tools(stream: bool) -> None:
    async with served(Reply.answer("Hello there, world", usage=(12, 7))) as (fake, upstream):
        answer = await answer_of(upstream, chat(stream, max_tokens=50))
    assert answer.content == "Hello there, world"
    assert answer.finish_reason == "stop"
    assert answer.usage is not None and answer.usage.total_tokens == 19
    sent = fake.requests[0]
    assert sent["max_output_tokens"] == 50
    tool = sent["tools"][0]
    assert (tool["type"], tool["name"], tool["strict"]) == ("function", "get_weather", False)
    assert "nullable" not in json.dumps(tool["parameters"])


async def test_calls_and_reasoning_sent_back_with_their_ids(stream: bool) -> None:
    reply = Reply.answer(
        calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})],
        thinking="Two cities.",
        signature="enc-123",
    )
    async with served(reply, Reply.answer("Sunny in both.")) as (fake, upstream):
        first = chat(stream)
        answer = await answer_of(upstream, first)
        assert answer.finish_reason == "tool_calls"
        assert len(answer.tool_calls) == 2
        final = await answer_of(upstream, chat(stream, history(first, answer)))
    assert final.content == "Sunny in both."
    items = fake.requests[1]["input"]
    kinds = [i["type"] for i in items]
    assert kinds[1:] == [
        "reasoning",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert items[1]["encrypted_content"] == "enc-123"
    assert all(i["id"].startswith("fc_") for i in items[2:4])


async def test_failed_response_is_an_upstream_error(stream: bool) -> None:
    async with served(Reply.stream_error("the model broke")) as (_, upstream):
        with pytest.raises(UpstreamError, match="the model broke"):
            await answer_of(upstream, chat(stream))


async def test_content_filter_ends_the_turn(stream: bool) -> None:
    async with served(Reply.blocked()) as (_, upstream):
        answer = await answer_of(upstream, chat(stream))
    assert answer.finish_reason == "content_filter"


async def test_rate_limit_keeps_retry_after(stream: bool) -> None:
    async with served(Reply.error(429, "slow", retry_after="4")) as (_, upstream):
        with pytest.raises(UpstreamStatusError) as caught:
            await answer_of(upstream, chat(stream))
    assert (caught.value.status, caught.value.headers) == (429, {"Retry-After": "4"})


async def test_list_models(stream: bool) -> None:
    async with served() as (_, upstream):
        assert await upstream.list_models() == ["gpt-fake"]
