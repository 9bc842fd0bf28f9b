"""HTTPUpstream against a real (fake) OpenAI-compatible server over loopback."""

from __future__ import annotations

import contextlib
import copy
import pickle
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson
import pytest
from aiohttp import web

from proxy.config import UpstreamConfig
from proxy.errors import UpstreamError, UpstreamStatusError, UpstreamTimeoutError
from proxy.turn.assembler import Assembler, Usage
from proxy.upstreams import HTTPUpstream
from proxy.upstreams.base import ChatTool, ChatTools, Relayable
from testing.upstream import FakeUpstream, Reply

SECRET = "sk-proxy-secret-0123456789"


@contextlib.asynccontextmanager
async def http_upstream(base_url: str, **config: Any) -> AsyncIterator[HTTPUpstream]:
    upstream = HTTPUpstream(UpstreamConfig(name="fake", base_url=base_url, **config))
    try:
        yield upstream
    finally:
        await upstream.aclose()


@contextlib.asynccontextmanager
async def served(
    reply: Reply | None = None, *, models: list[str] | None = None, **config: Any
) -> AsyncIterator[tuple[FakeUpstream, HTTPUpstream]]:
    """A fake upstream answering `reply`, and an HTTPUpstream pointed at it."""
    fake = FakeUpstream(reply, models=models or ["fake-model"])
    async with fake, http_upstream(fake.base_url, **config) as upstream:
        yield fake, upstream


async def collect(
    upstream: HTTPUpstream, body: dict[str, Any], headers: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    async with upstream.complete(body, headers=headers) as chunks:
        return [chunk async for chunk in chunks]


def ask(stream: bool, **extra: Any) -> dict[str, Any]:
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}
    return body | {"stream": stream} | extra


@contextlib.asynccontextmanager
async def tiny_server(handler: Any) -> AsyncIterator[str]:
    """An aiohttp server answering every request with `handler`, for what the fake cannot do."""
    runner = web.ServerRunner(web.Server(handler))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A loopback port bound but not listening while the block runs: connections to it are
    refused (a port closed before the test connects could meanwhile be taken, by another
    worker's server or by the client's own end of the connection)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize("stream", [True, False])
async def test_text_answer_streamed_and_not(stream: bool) -> None:
    async with served(Reply.text("Hello there world")) as (fake, upstream):
        options = {"stream_options": {"include_usage": True}} if stream else {}
        chunks = await collect(upstream, ask(stream, **options))
    assembler = Assembler()
    for chunk in chunks:
        assembler.feed(chunk)
    answer = assembler.finish()
    assert answer.content == "Hello there world"
    assert answer.finish_reason == "stop"
    assert answer.usage == Usage(10, 5, 15)
    assert fake.requests[0]["messages"] == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("style", ["vllm", "interleaved", "ollama"])
async def test_streamed_tool_calls_assemble(style: Any) -> None:
    calls = [("demo_get_weather", {"city": "Paris"}), ("demo_calculate", {"expression": "1+2"})]
    async with served(Reply.tool_calls(calls, style=style)) as (_fake, upstream):
        chunks = await collect(upstream, ask(True))
    assembler = Assembler()
    for chunk in chunks:
        assembler.feed(chunk)
    answer = assembler.finish()
    assert answer.finish_reason == "tool_calls"
    got = [(c.name, c.arguments) for c in answer.tool_calls]
    if style == "ollama":
        assert got == calls
    else:
        assert got == [
            ("demo_get_weather", '{"city":"Paris"}'),
            ("demo_calculate", '{"expression":"1+2"}'),
        ]


async def test_unstreamed_answer_is_one_chunk_with_the_whole_message() -> None:
    async with served(Reply.text("whole answer")) as (_fake, upstream):
        chunks = await collect(upstream, ask(False))
    assert len(chunks) == 1
    choice = chunks[0]["choices"][0]
    assert choice["delta"]["content"] == "whole answer"
    assert choice["finish_reason"] == "stop"
    assert chunks[0]["usage"]["total_tokens"] == 15


@pytest.mark.parametrize("stream", [True, False])
async def test_tools_go_out_as_their_json_and_a_rewritten_copy_as_it_is(stream: bool) -> None:
    function = {"name": "f", "description": "d", "parameters": {"type": "object"}}
    schema = {"type": "function", "function": function}
    tool = ChatTool(schema)
    rewritten = {**tool, "function": {**function, "description": "changed"}}
    client = {"type": "function", "function": {"name": "g"}}
    async with served(Reply.text("ok")) as (fake, upstream):
        body = ask(stream, tools=[tool, rewritten, client])
        if stream:
            await collect(upstream, body)
        else:
            await upstream.answer(body)
    assert fake.requests[0]["tools"] == [schema, rewritten, client]
    assert body["tools"] == [tool, rewritten, client]  # the caller's body is left as it was


@pytest.mark.parametrize("stream", [True, False])
async def test_a_toolsets_list_goes_out_as_its_json(stream: bool) -> None:
    function = {"name": "f", "description": "d", "parameters": {"type": "object"}}
    schema = {"type": "function", "function": function}
    tools = ChatTools([ChatTool(schema), {"type": "function", "function": {"name": "g"}}])
    async with served(Reply.text("ok")) as (fake, upstream):
        body = ask(stream, tools=tools)
        if stream:
            await collect(upstream, body)
        else:
            await upstream.answer(body)
    assert fake.requests[0]["tools"] == [schema, {"type": "function", "function": {"name": "g"}}]
    assert body["tools"] is tools


def test_a_copy_of_a_toolsets_list_is_a_plain_list() -> None:
    schema = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    tools = ChatTools([ChatTool(schema)])
    assert orjson.loads(orjson.dumps(tools.json)) == [schema]
    for copied in (copy.copy(tools), copy.deepcopy(tools), pickle.loads(pickle.dumps(tools))):
        assert copied.__class__ is list and copied == [schema]


async def test_an_answers_relayable_chunk_has_its_fields_made_when_read() -> None:
    # `answer`'s chunk holds its fields for a reader that asks (`fields`); `complete`'s,
    # which any adapter may read, has them made.
    async with served(Reply.text("whole answer")) as (_fake, upstream):
        (answered,) = await upstream.answer(ask(False))
        (completed,) = await collect(upstream, ask(False))
    assert answered.__class__ is completed.__class__ is Relayable
    assert answered.raw is not None and dict(answered) == {}
    assert completed["choices"][0]["delta"]["content"] == "whole answer"
    made = answered.fields()  # type: ignore[attr-defined]
    assert made["choices"][0]["delta"]["content"] == "whole answer"
    assert {**made, "id": None} == {**completed, "id": None}


async def test_client_authorization_forwarded_when_api_key_empty() -> None:
    async with served() as (fake, upstream):
        await collect(upstream, ask(True), headers={"authorization": "Bearer client-key"})
        await collect(upstream, ask(True), headers={})
    assert fake.headers[0]["authorization"] == "Bearer client-key"
    assert "authorization" not in fake.headers[1]
    assert fake.headers[0]["content-type"] == "application/json"


async def test_configured_api_key_replaces_client_authorization() -> None:
    async with served(api_key=SECRET) as (fake, upstream):
        await collect(upstream, ask(False), headers={"authorization": "Bearer client-key"})
    assert fake.headers[0]["authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize("status", [401, 403])
async def test_rejected_credentials_are_a_502_that_does_not_echo_the_key(status: int) -> None:
    reply = Reply.error(status, f"Incorrect API key provided: {SECRET}", type="auth_error")
    async with served(reply, api_key=SECRET) as (_fake, upstream):
        with pytest.raises(UpstreamError) as caught:
            await collect(upstream, ask(True))
    error = caught.value
    assert not isinstance(error, UpstreamStatusError)
    assert error.status == 502
    assert f"({status})" in error.message
    assert SECRET not in str(error.body())
    assert SECRET not in str(error)


@pytest.mark.parametrize("status", [400, 404, 422, 429, 500, 503])
async def test_configured_key_echoed_in_an_error_never_reaches_the_client(status: int) -> None:
    # Regression: a 4xx passed through, or a 5xx's message, carried the proxy's own key.
    reply = Reply.error(status, f"invalid key {SECRET} (header: Bearer {SECRET})")
    async with served(reply, api_key=SECRET) as (_fake, upstream):
        with pytest.raises(UpstreamError) as caught:
            await collect(upstream, ask(True))
    message = caught.value.body()["error"]["message"]
    assert SECRET not in message
    assert "invalid key [redacted]" in message
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize("status", [400, 401, 403, 500])
async def test_forwarded_client_key_echoed_in_an_error_never_reaches_the_client(
    status: int,
) -> None:
    client_key = "sk-client-9876543210"
    reply = Reply.error(status, f"Authorization: Bearer {client_key} is not valid")
    async with served(reply) as (_fake, upstream):
        with pytest.raises(UpstreamError) as caught:
            headers = {"authorization": f"Bearer {client_key}"}
            await collect(upstream, ask(False), headers=headers)
    message = caught.value.body()["error"]["message"]
    assert client_key not in message
    assert "Authorization: [redacted] is not valid" in message


async def test_key_at_the_clipping_edge_leaves_no_prefix() -> None:
    # Redaction runs before the message is clipped, so no leading part of a key survives.
    reply = Reply.error(400, "x" * 1995 + SECRET)
    async with served(reply, api_key=SECRET) as (_fake, upstream):
        with pytest.raises(UpstreamStatusError) as caught:
            await collect(upstream, ask(True))
    assert SECRET[:5] not in caught.value.message


async def test_key_echoed_in_a_plain_text_error_never_reaches_the_client() -> None:
    async def handler(request: web.BaseRequest) -> web.Response:
        return web.Response(status=502, text=f"gateway saw {request.headers['Authorization']}")

    async with tiny_server(handler) as base_url, http_upstream(base_url, api_key=SECRET) as up:
        with pytest.raises(UpstreamError) as caught:
            await collect(up, ask(True))
    assert SECRET not in caught.value.message
    assert "gateway saw [redacted]" in caught.value.message


@pytest.mark.parametrize("status", [401, 403])
async def test_rejected_client_key_is_the_clients_error(status: int) -> None:
    # Regression: a forwarded client key the upstream refused came back as a 502.
    reply = Reply.error(status, "Incorrect API key provided", type="auth_error")
    async with served(reply) as (_fake, upstream):
        with pytest.raises(UpstreamStatusError) as caught:
            await collect(upstream, ask(True), headers={"authorization": "Bearer client-key"})
    assert caught.value.status == status
    assert caught.value.code == "invalid_api_key"


async def test_rate_limit_keeps_status_and_retry_after() -> None:
    async def handler(request: web.BaseRequest) -> web.Response:
        body = b'{"error": {"message": "slow down", "type": "rate_limit"}}'
        return web.Response(
            status=429,
            body=body,
            content_type="application/json",
            headers={"Retry-After": "17"},
        )

    async with tiny_server(handler) as base_url, http_upstream(base_url) as upstream:
        with pytest.raises(UpstreamStatusError) as caught:
            await collect(upstream, ask(True))
    error = caught.value
    assert error.status == 429
    assert error.code == "rate_limit_exceeded"
    assert error.headers == {"Retry-After": "17"}
    assert error.message == "slow down"


async def test_rate_limit_without_retry_after_has_no_header() -> None:
    async with served(Reply.error(429, "too many")) as (_fake, upstream):
        with pytest.raises(UpstreamStatusError) as caught:
            await collect(upstream, ask(False))
    assert caught.value.status == 429
    assert caught.value.headers == {}


async def test_client_error_status_is_passed_through_with_message() -> None:
    async with served(Reply.error(400, "messages[0].content is required")) as (_fake, upstream):
        with pytest.raises(UpstreamStatusError) as caught:
            await collect(upstream, ask(True))
    assert caught.value.status == 400
    assert caught.value.body()["error"]["message"] == "messages[0].content is required"


async def test_server_error_becomes_502() -> None:
    reply = Reply.error(500, "CUDA out of memory", type="server_error")
    async with served(reply) as (_fake, upstream):
        with pytest.raises(UpstreamError) as caught:
            await collect(upstream, ask(True))
    assert not isinstance(caught.value, UpstreamStatusError)
    assert caught.value.status == 502
    assert "CUDA out of memory" in caught.value.message


@pytest.mark.parametrize("stream", [True, False])
async def test_garbage_body_is_an_upstream_error(stream: bool) -> None:
    async with served(Reply.garbage()) as (_fake, upstream):
        with pytest.raises(UpstreamError, match="not JSON") as caught:
            await collect(upstream, ask(stream))
    assert caught.value.status == 502


async def test_stream_dropped_midway_is_an_upstream_error() -> None:
    async with served(Reply.drop(after_chunks=2)) as (_fake, upstream):
        with pytest.raises(UpstreamError, match="broke off"):
            await collect(upstream, ask(True))


@pytest.mark.timeout(5)  # a missing timeout fails here, not at the suite's limit
async def test_no_first_byte_in_time_is_a_504() -> None:
    async with served(Reply.hang(), first_byte_timeout_s=0.2) as (_fake, upstream):
        with pytest.raises(UpstreamTimeoutError) as caught:
            await collect(upstream, ask(True))
    assert caught.value.status == 504


@pytest.mark.timeout(5)  # a missing timeout fails here, not at the suite's limit
async def test_stalled_stream_is_a_504() -> None:
    async with served(Reply.stream_then_hang("partial"), idle_timeout_s=0.2) as (_fake, upstream):
        received: list[dict[str, Any]] = []
        with pytest.raises(UpstreamTimeoutError, match="stalled"):
            async with upstream.complete(ask(True)) as chunks:
                async for chunk in chunks:
                    received.append(chunk)
    assert received, "the chunks before the stall reached the caller"


async def test_connection_refused_is_an_upstream_error() -> None:
    with refused_port() as port:
        base_url = f"http://127.0.0.1:{port}/v1"
        async with http_upstream(base_url, api_key=SECRET) as upstream:
            with pytest.raises(UpstreamError, match="unreachable") as caught:
                await collect(upstream, ask(True))
    assert caught.value.status == 502
    assert SECRET not in str(caught.value)


async def test_list_models() -> None:
    async with served(models=["llama-3", "qwen-2"]) as (_fake, upstream):
        assert await upstream.list_models() == ["llama-3", "qwen-2"]


async def test_list_models_of_unreachable_server_says_why() -> None:
    with refused_port() as port:
        async with http_upstream(f"http://127.0.0.1:{port}/v1") as upstream:
            refused = f"127.0.0.1:{port} \\(connection refused\\)"
            with pytest.raises(UpstreamError, match=refused):
                await upstream.list_models()


async def test_list_models_rejects_a_non_list() -> None:
    async def handler(request: web.BaseRequest) -> web.Response:
        return web.json_response({"object": "list", "data": "nope"})

    async with tiny_server(handler) as base_url, http_upstream(base_url) as upstream:
        with pytest.raises(UpstreamError, match="invalid model list"):
            await upstream.list_models()


async def test_large_unstreamed_answer_is_read_whole() -> None:
    # A 2 MB body arrives in many reads; the answer must not be cut at the first one.
    text = "word " * 400_000
    async with served(Reply.text(text)) as (_fake, upstream):
        chunks = await collect(upstream, ask(False))
    assert chunks[0]["choices"][0]["delta"]["content"] == text


def test_a_copy_of_a_tool_with_its_json_is_a_plain_dict() -> None:
    schema = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    tool = ChatTool(schema)
    for copied in (copy.copy(tool), copy.deepcopy(tool), pickle.loads(pickle.dumps(tool))):
        assert copied.__class__ is dict and copied == schema
    deep = copy.deepcopy(tool)
    deep["function"]["name"] = "g"
    assert tool["function"]["name"] == "f"
