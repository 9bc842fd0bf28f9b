"""The raw SSE stream: keep-alives while tools run, optional tool events, models, health."""

from __future__ import annotations

import asyncio
import threading

import aiohttp
import orjson

from testing.upstream import FakeUpstream, Reply
from tests.e2e.tools import registry_with

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
    """The tool runs until the client has seen a keep-alive comment (10 s at most), so the
    test does not depend on how fast a loaded machine runs the tool or the ticker."""
    seen = threading.Event()

    def hold() -> str:
        """Wait until the client saw a keep-alive."""
        return "held" if seen.wait(10) else "no keep-alive within 10 s"

    registry = registry_with()
    registry.register(hold, namespace="t")
    upstream.script(Reply.tool_calls([("t_hold", {})]), Reply.text("rested"))
    payload = orjson.dumps({"model": "m", "messages": USER, "stream": True})
    raw = b""
    async with (
        make_proxy(registry, loop={"keepalive_s": 0.02}) as proxy,
        aiohttp.ClientSession() as session,
        session.post(f"{proxy.base_url}/chat/completions", data=payload) as response,
    ):
        async for chunk in response.content.iter_any():
            raw += chunk
            if b": keep-alive" in raw:
                seen.set()
    assert seen.is_set()
    assert upstream.requests[1]["messages"][-1]["content"] == "held"
    data = [orjson.loads(e[6:]) for e in raw.split(b"\n\n") if e.startswith(b"data: {")]
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
                address = upstream.base_url.split("/")[2]
                assert (await ready.json()) == {
                    "status": "ready",
                    "tools": 5,
                    "sources": [],
                    "upstreams": [
                        {"name": "fake", "address": address, "reachable": True, "error": None}
                    ],
                }
    assert [m.id for m in models.data] == ["fake-model"]


async def _first_bytes(url: str, path: str, body: dict) -> tuple[int, bytes]:
    """The status and the first bytes of a stream whose model never answers."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}{path}", data=orjson.dumps(body)) as response,
    ):
        first = await asyncio.wait_for(response.content.readuntil(b": keep-alive\n\n"), 10)
        return response.status, first


async def test_a_silent_model_still_gets_headers_and_keep_alives(
    make_proxy, upstream: FakeUpstream
) -> None:
    # A slow first token (long prefill, hidden reasoning) must not leave the client, or a
    # load balancer's idle timer, without a byte: the stream opens with keep-alives.
    upstream.script(Reply.hang(), Reply.hang(), Reply.hang())
    async with make_proxy(registry_with(), loop={"keepalive_s": 0.05}) as proxy:
        chat = {"model": "m", "messages": USER, "stream": True}
        status, first = await _first_bytes(proxy.base_url, "/chat/completions", chat)
        assert status == 200
        assert first.startswith(b"data: ") and b'"role":"assistant"' in first
        responses = {"model": "m", "input": "hi", "stream": True}
        status, first = await _first_bytes(proxy.base_url, "/responses", responses)
        assert status == 200 and first.startswith(b"event: response.created")
        root = proxy.base_url.removesuffix("/v1")
        messages = {"model": "m", "max_tokens": 64, "messages": USER, "stream": True}
        status, first = await _first_bytes(root, "/v1/messages", messages)
        assert status == 200 and first.startswith(b"event: message_start")


async def test_a_model_that_answers_in_time_gets_no_keep_alive(
    make_proxy, upstream: FakeUpstream
) -> None:
    upstream.script(Reply.text("quick"))
    async with make_proxy(registry_with(), loop={"keepalive_s": 30}) as proxy:
        comments, data = await _raw_stream(proxy.base_url, {})
    assert not [c for c in comments if c.startswith(b": keep-alive")]
    assert "".join(d["choices"][0]["delta"].get("content", "") for d in data) == "quick"
