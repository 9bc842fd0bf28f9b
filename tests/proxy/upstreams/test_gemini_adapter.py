"""GeminiUpstream against the Gemini fake: conversion both ways, usage, errors, signatures."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

import pytest

from proxy.config import UpstreamConfig
from proxy.errors import UpstreamError, UpstreamStatusError
from proxy.upstreams import GeminiUpstream
from proxy.upstreams.base import Relayable, collect
from proxy.upstreams.gemini import GeminiDialect
from testing.gemini_upstream import FakeGemini, Reply, signature
from tests.proxy.upstreams.helpers import answer_of, chat, history

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
SECRET = "AIza-secret-0123456789"


@contextlib.asynccontextmanager
async def served(*replies: Reply) -> AsyncIterator[tuple[FakeGemini, GeminiUpstream]]:
    async with FakeGemini() as fake:
        fake.script(*replies)
        config = UpstreamConfig(name="gem", base_url=fake.base_url, api_key=SECRET, format="gemini")
        upstream = GeminiUpstream(config)
        try:
            yield fake, upstream
        finally:
            await upstream.aclose()


async def test_text_usage_and_url(stream: bool) -> None:
    reply = Reply.answer("Hello there, world", thinking="hmm", usage=(12, 7))
    async with served(reply) as (fake, upstream):
        answer = await answer_of(upstream, chat(stream))
    assert answer.content == "Hello there, world"
    assert answer.finish_reason == "stop"
    assert answer.usage is not None
    # The service counts the thought ("hmm", one token) apart; completion tokens include it.
    usage = answer.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (12, 8, 20)
    assert usage.reasoning_tokens == 1
    action = "streamGenerateContent?alt=sse" if stream else "generateContent"
    assert fake.paths[0] == f"/v1beta/models/m:{action}"
    assert fake.headers[0]["x-goog-api-key"] == SECRET
    declaration = fake.requests[0]["tools"][0]["functionDeclarations"][0]
    # A union of two types would collapse in the OpenAPI subset: the full schema goes.
    assert "parameters" not in declaration
    assert declaration["parametersJsonSchema"]["properties"]["days"]["anyOf"]


@pytest.mark.parametrize("ids", [True, False], ids=["ids", "no-ids"])
async def test_several_calls_answered_with_stop_and_signature_sent_back(
    stream: bool, ids: bool
) -> None:
    reply = Reply.answer(
        calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})],
        signature="sig-gem",
        ids=ids,
    )
    async with served(reply, Reply.answer("Sunny in both.")) as (fake, upstream):
        first = chat(stream)
        answer = await answer_of(upstream, first)
        assert answer.finish_reason == "tool_calls"
        cities = [json.loads(str(c.arguments))["city"] for c in answer.tool_calls]
        assert cities == ["Paris", "Oslo"]
        assert len({c.id for c in answer.tool_calls}) == 2
        final = await answer_of(upstream, chat(stream, history(first, answer)))
    assert final.content == "Sunny in both."
    model_turn, responses = fake.requests[1]["contents"][1:3]
    assert model_turn["parts"][0]["thoughtSignature"] == signature("sig-gem")
    assert "thoughtSignature" not in model_turn["parts"][1]
    assert [("id" in p["functionCall"]) for p in model_turn["parts"]] == [ids, ids]
    assert [p["functionResponse"]["response"] for p in responses["parts"]] == [
        {"output": "sunny"},
        {"output": "sunny"},
    ]


async def test_safety_block_ends_with_content_filter(stream: bool) -> None:
    async with served(Reply.blocked()) as (_, upstream):
        answer = await answer_of(upstream, chat(stream))
    assert answer.finish_reason == "content_filter"


async def test_rate_limit_keeps_retry_after(stream: bool) -> None:
    async with served(Reply.error(429, "quota", retry_after="3")) as (_, upstream):
        with pytest.raises(UpstreamStatusError) as caught:
            await answer_of(upstream, chat(stream))
    assert (caught.value.status, caught.value.headers) == (429, {"Retry-After": "3"})


async def test_unavailable_mid_stream_is_a_503(stream: bool) -> None:
    async with served(Reply.stream_error("model overloaded")) as (_, upstream):
        with pytest.raises(UpstreamError, match="overloaded") as caught:
            await answer_of(upstream, chat(stream))
    assert caught.value.status in (502, 503)


async def test_list_models(stream: bool) -> None:
    async with served() as (_, upstream):
        assert await upstream.list_models() == ["gemini-fake"]


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


async def test_each_model_has_its_url_quoted_and_kept(stream: bool) -> None:
    dialect = GeminiDialect(UpstreamConfig(name="gem", base_url="http://h", format="gemini"))
    action = "streamGenerateContent?alt=sse" if stream else "generateContent"
    for _ in range(2):  # the second time from what the dialect kept
        for model, path in [
            ("gemini-2.5-flash", "gemini-2.5-flash"),
            ("models/gemini-pro", "gemini-pro"),
            ("odd/model name", "odd%2Fmodel%20name"),
            (7, "7"),
        ]:
            body = chat(stream) | {"model": model}
            assert dialect.request(body).url == f"http://h/v1beta/models/{path}:{action}"
    other = "streamGenerateContent?alt=sse" if not stream else "generateContent"
    body = chat(not stream) | {"model": "gemini-2.5-flash"}
    assert dialect.request(body).url == f"http://h/v1beta/models/gemini-2.5-flash:{other}"
