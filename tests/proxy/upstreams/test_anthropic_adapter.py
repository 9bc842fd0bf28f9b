"""AnthropicUpstream against the Anthropic fake: conversion both ways, usage, errors."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

import pytest

from proxy.config import UpstreamConfig
from proxy.errors import UpstreamError, UpstreamStatusError
from proxy.upstreams import PROVIDER_KEY, AnthropicUpstream
from proxy.upstreams.base import Relayable, collect
from testing.anthropic_upstream import FakeAnthropic, Reply
from tests.proxy.upstreams.helpers import answer_of, chat, history

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
SECRET = "sk-ant-secret-0123456789"


@contextlib.asynccontextmanager
async def served(*replies: Reply) -> AsyncIterator[tuple[FakeAnthropic, AnthropicUpstream]]:
    async with FakeAnthropic() as fake:
        fake.script(*replies)
        config = UpstreamConfig(
            name="claude", base_url=fake.base_url, api_key=SECRET, format="anthropic"
        )
        upstream = AnthropicUpstream(config)
        try:
            yield fake, upstream
        finally:
            await upstream.aclose()


async def test_text_and_usage(stream: bool) -> None:
    async with served(Reply.answer("Hello there, world", usage=(12, 7))) as (fake, upstream):
        answer = await answer_of(upstream, chat(stream))
    assert answer.content == "Hello there, world"
    assert answer.finish_reason == "stop"
    assert answer.usage is not None
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (12, 7)
    sent = fake.requests[0]
    assert sent["max_tokens"] == 4096
    assert fake.headers[0]["x-api-key"] == SECRET
    assert fake.headers[0]["anthropic-version"] == "2023-06-01"
    assert "stream_options" not in sent
    # The tool's own schema, not rosetta's collapsed union.
    days = sent["tools"][0]["input_schema"]["properties"]["days"]
    assert days == {"anyOf": [{"type": "integer"}, {"type": "array", "items": {}}]}


async def test_tool_calls_thinking_kept_and_sent_back(stream: bool) -> None:
    reply = Reply.answer(
        "Checking.",
        calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})],
        thinking="I should call the tool twice.",
        signature="sig-abc",
    )
    async with served(reply, Reply.answer("Sunny in both.")) as (fake, upstream):
        first = chat(
            stream, [{"role": "system", "content": "Be brief."}, *chat(stream)["messages"]]
        )
        answer = await answer_of(upstream, first)
        cities = [json.loads(str(c.arguments))["city"] for c in answer.tool_calls]
        assert cities == ["Paris", "Oslo"]
        assert answer.finish_reason == "tool_calls"
        assert answer.provider is not None
        messages = history(first, answer)
        messages.append({"role": "system", "content": "Answer in English."})
        final = await answer_of(upstream, chat(stream, messages))
    assert final.content == "Sunny in both."
    second = fake.requests[1]
    assert second["system"][0]["text"] == "Be brief.\n\nAnswer in English."
    assistant = second["messages"][1]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "I should call the tool twice.",
        "signature": "sig-abc",
    }
    results = second["messages"][2]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result"]
    assert all(PROVIDER_KEY not in str(m) for m in second["messages"])


async def test_overloaded_is_a_503_with_retry_after(stream: bool) -> None:
    reply = Reply.error(529, "Overloaded", type="overloaded_error")
    async with served(reply) as (_, upstream):
        with pytest.raises(UpstreamError) as caught:
            await answer_of(upstream, chat(stream))
    assert caught.value.status == 503
    assert caught.value.headers["Retry-After"]


async def test_overloaded_mid_stream_is_a_503(stream: bool) -> None:
    async with served(Reply.stream_error("Overloaded")) as (_, upstream):
        with pytest.raises(UpstreamError, match="Overloaded") as caught:
            await answer_of(upstream, chat(stream))
    assert caught.value.status == 503


async def test_rate_limit_keeps_retry_after(stream: bool) -> None:
    reply = Reply.error(429, "slow down", type="rate_limit_error", retry_after="7")
    async with served(reply) as (_, upstream):
        with pytest.raises(UpstreamStatusError) as caught:
            await answer_of(upstream, chat(stream))
    assert caught.value.status == 429
    assert caught.value.headers == {"Retry-After": "7"}


async def test_key_echoed_in_an_error_is_redacted(stream: bool) -> None:
    async with served(Reply.error(400, f"bad key {SECRET}")) as (_, upstream):
        with pytest.raises(UpstreamStatusError) as caught:
            await answer_of(upstream, chat(stream))
    assert SECRET not in caught.value.message


async def test_refusal_ends_with_content_filter(stream: bool) -> None:
    async with served(Reply.blocked()) as (_, upstream):
        answer = await answer_of(upstream, chat(stream))
    assert answer.finish_reason == "content_filter"
    assert not answer.tool_calls


async def test_list_models(stream: bool) -> None:
    async with served() as (_, upstream):
        assert await upstream.list_models() == ["claude-fake"]


async def test_a_plain_whole_answer_carries_the_chat_body_it_is_relayed_as(stream: bool) -> None:
    async with served(Reply.answer("Hello there, world", usage=(12, 7))) as (_, upstream):
        body = chat(stream)
        chunks = await (collect(upstream, body) if stream else upstream.answer(body))
    relayed = [chunk for chunk in chunks if chunk.__class__ is Relayable]
    if stream:
        assert not relayed  # a stream's chunks go their own way
        return
    (chunk,) = relayed
    sent = json.loads(chunk.raw)  # the codec's, not the upstream's bytes: the transport kept it
    assert sent["object"] == "chat.completion" and sent["model"] == body["model"]
    assert sent["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello there, world"},
            "finish_reason": "stop",
            "logprobs": None,
        }
    ]
    assert sent["usage"] == {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
