"""The raw SSE stream: keep-alives while tools run, optional tool events, models, health."""

from __future__ import annotations

import aiohttp
import orjson

from tests.e2e.tools import registry_with
from tests.fakes.upstream import FakeUpstream, Reply

USER = [{"role": "user", "content": "hi"}]


async def _raw_stream(url: str, body: dict) -> tuple[list[bytes], list[dict]]:
    """Every SSE event of a response: comments kept as bytes, data parsed."""
    payload = orjson.dumps({"model": "m", "messages": USER, "stream": True, **body})
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/chat/completions", data=payload) as response,
    ):
        assert response.status == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        raw = await response.read()
    events = [e for e in raw.split(b"\n\n") if e]
    comments = [e for e in events if e.startswith(b":")]
    data = [orjson.loads(e[6:]) for e in events if e.startswith(b"data: {")]
    assert events[-1] == b"data: [DONE]"
    return comments, data


async def test_keepalive_comments_while_tools_run(make_proxy, upstream: FakeUpstream) -> None:
    upstream.script(Reply.tool_calls([("t_nap", {"seconds": 0.15})]), Reply.text("rested"))
    registry = registry_with()
    async with make_proxy(registry, loop={"keepalive_s": 0.02}) as proxy:
        comments, data = await _raw_stream(proxy.base_url, {})
    assert b": keep-alive" in comments
    assert "".join(d["choices"][0]["delta"].get("content", "") for d in data) == "rested"


async def test_stream_tool_events_shows_rounds(make_proxy, upstream: FakeUpstream) -> None:
    upstream.script(Reply.tool_calls([("t_add", {"a": 2, "b": 3})]), Reply.text("5"))
    async with make_proxy(registry_with()) as proxy:
        _, data = await _raw_stream(proxy.base_url, {"toolwire": {"stream_tool_events": True}})
    events = [d["choices"][0]["delta"].get("toolwire") for d in data if d["choices"]]
    events = [e for e in events if e]
    assert events[0]["tool_calls"][0]["function"]["name"] == "t_add"
    assert events[1]["tool_results"][0]["content"] == "5"
    assert events[1]["tool_results"][0]["is_error"] is False


async def test_tool_events_hidden_by_default(make_proxy, upstream: FakeUpstream) -> None:
    upstream.script(Reply.tool_calls([("t_add", {"a": 2, "b": 3})]), Reply.text("5"))
    async with make_proxy(registry_with()) as proxy:
        _, data = await _raw_stream(proxy.base_url, {})
    assert not any("toolwire" in d["choices"][0]["delta"] for d in data if d["choices"])
    finishes = [d["choices"][0]["finish_reason"] for d in data if d["choices"]]
    assert [f for f in finishes if f] == ["stop"]


async def test_usage_only_when_asked(make_proxy, upstream: FakeUpstream) -> None:
    upstream.script(Reply.text("a"), Reply.text("b"))
    async with make_proxy() as proxy:
        _, without = await _raw_stream(proxy.base_url, {})
        _, with_usage = await _raw_stream(
            proxy.base_url, {"stream_options": {"include_usage": True}}
        )
    assert not any(d.get("usage") for d in without)
    assert with_usage[-1]["usage"] == {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
    }
    assert with_usage[-1]["choices"] == []


async def test_models_and_health(make_proxy, upstream: FakeUpstream) -> None:
    async with make_proxy(registry_with()) as proxy:
        models = await proxy.client.models.list()
        root = proxy.base_url.removesuffix("/v1")
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{root}/healthz") as health:
                assert health.status == 200
            async with session.get(f"{root}/readyz") as ready:
                assert (await ready.json()) == {"status": "ready", "tools": 5, "sources": []}
    assert [m.id for m in models.data] == ["fake-model"]
