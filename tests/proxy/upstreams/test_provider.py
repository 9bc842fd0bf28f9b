"""ProviderUpstream: a dialect of a few lines is a whole upstream (what a new wire format
writes), against the Chat fake."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import pytest

from proxy.config import UpstreamConfig
from proxy.errors import UpstreamError
from proxy.upstreams import ProviderUpstream
from proxy.upstreams.anthropic import AnthropicDialect
from proxy.upstreams.openai_chat import ChatCodec, ChatDialect
from proxy.upstreams.provider import Request
from proxy.upstreams.transport import Transport
from testing.upstream import FakeUpstream, Reply


class Shouting:
    """Chat, with the last message upper-cased and the key in a header of its own."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.models_url = f"{base_url}/models"
        self.asked: list[Mapping[str, str] | None] = []

    def request(self, body: dict[str, Any]) -> Request:
        *earlier, last = body["messages"]
        loud = {**last, "content": str(last["content"]).upper()}
        payload = {**body, "messages": [*earlier, loud]}
        stream = bool(body.get("stream"))
        codec = functools.partial(ChatCodec, body["model"])
        return Request(f"{self.base_url}/chat/completions", payload, stream, codec)

    def headers(self, incoming: Mapping[str, str] | None) -> tuple[dict[str, str], str]:
        self.asked.append(incoming)
        key = (incoming or {}).get("x-key", "")
        return {"Content-Type": "application/json", "x-shout-key": key}, key

    def models(self, payload: Any) -> list[str]:
        if not isinstance(payload, dict):
            raise UpstreamError("not a model list")
        return sorted(m["id"] for m in payload["data"])


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_dialect_decides_the_request_the_headers_and_the_reading(stream: bool) -> None:
    async with FakeUpstream(Reply.text("fine, thanks"), models=["b", "a"]) as fake:
        dialect = Shouting(fake.base_url)
        transport = Transport(UpstreamConfig(name="s", base_url=fake.base_url))
        upstream = ProviderUpstream(transport, dialect)
        try:
            body = {"model": "a", "messages": [{"role": "user", "content": "hi"}]}
            async with upstream.complete(
                {**body, "stream": stream}, headers={"x-key": "k1"}
            ) as chunks:
                text = "".join(
                    [c["choices"][0]["delta"].get("content") or "" async for c in chunks]
                )
            assert await upstream.list_models() == ["a", "b"]
        finally:
            await upstream.aclose()
    assert upstream.name == "s"
    assert text == "fine, thanks"
    assert fake.requests[0]["messages"] == [{"role": "user", "content": "HI"}]
    assert fake.headers[0]["x-shout-key"] == "k1"
    # The model list is asked without a request's headers.
    assert dialect.asked == [{"x-key": "k1"}, None]


@pytest.mark.parametrize("api_key", ["", "sk-configured"])
def test_the_chat_dialect_adds_what_the_request_brings_to_its_usual_headers(api_key: str) -> None:
    dialect = ChatDialect(UpstreamConfig(name="u", base_url="http://up/v1", api_key=api_key))
    keyed = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    usual = {"Content-Type": "application/json", **keyed}
    for incoming in (None, {}, {"x-other": "1"}, {"traceparent": ""}):
        assert dialect.headers(incoming) == (usual, keyed.get("Authorization", ""))
    client = {"authorization": "Bearer sk-client"}
    forwarded = {"Authorization": "Bearer sk-client"}
    assert dialect.headers(client) == (
        {**usual, **(keyed or forwarded)},
        (keyed or forwarded)["Authorization"],
    )
    traced = {"traceparent": "00-a-b-01", "tracestate": "k=v"}
    assert dialect.headers(traced) == ({**usual, **traced}, keyed.get("Authorization", ""))


@pytest.mark.parametrize("api_key", ["", "sk-ant-configured"])
def test_the_anthropic_dialect_adds_what_the_request_brings_to_its_usual_headers(
    api_key: str,
) -> None:
    config = UpstreamConfig(name="u", base_url="http://up", api_key=api_key, format="anthropic")
    dialect = AnthropicDialect(config)
    keyed = {"x-api-key": api_key} if api_key else {}
    usual = {"Content-Type": "application/json", "anthropic-version": "2023-06-01", **keyed}
    for incoming in (None, {}, {"x-other": "1"}, {"traceparent": ""}):
        headers, secret = dialect.headers(incoming)
        assert (headers, secret) == (usual, api_key)
        assert headers is dialect.headers(None)[0]  # made once, shared
    for client, forwarded in (
        ({"x-api-key": "sk-client"}, {"x-api-key": "sk-client"}),
        ({"authorization": "Bearer sk-c"}, {"Authorization": "Bearer sk-c"}),
    ):
        made = {**usual, **(keyed or forwarded)}
        assert dialect.headers(client) == (made, api_key or next(iter(forwarded.values())))
    traced = {"traceparent": "00-a-b-01", "tracestate": "k=v"}
    assert dialect.headers(traced) == ({**usual, **traced}, api_key)
    assert dialect.headers(traced)[0] is not dialect.headers(traced)[0]


def test_the_chat_dialect_reads_whole_answers_with_one_codec_per_model() -> None:
    dialect = ChatDialect(UpstreamConfig(name="u", base_url="http://up/v1"))

    def codec(model: Any, stream: bool = False) -> Any:
        return dialect.request({"model": model, "messages": [], "stream": stream}).codec()

    assert codec("a") is codec("a") and codec("a") is not codec("b")
    answer = {
        "id": "x",
        "object": "chat.completion",
        "created": 1,
        "model": "b",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    relayed = [type(c(answer)[0]).__name__ for c in (codec("a").whole, codec("b").whole)]
    assert relayed == ["dict", "Relayable"], "each codec reads for its own model"
    assert codec("a", stream=True) is not codec("a", stream=True), "a stream's codec keeps state"
    assert codec(["odd"]) is not codec(["odd"])  # a model that is no name is not kept
