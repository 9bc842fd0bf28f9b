"""Bad client input and failing upstreams get OpenAI-shaped errors, never a 500."""

from __future__ import annotations

import aiohttp
import openai
import pytest

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask
from tests.e2e.tools import registry_with

USER = [{"role": "user", "content": "hi"}]


async def _post(url: str, data: bytes, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{url}/chat/completions",
            data=data,
            headers={"content-type": "application/json", **(headers or {})},
        ) as response,
    ):
        return response.status, await response.json()


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (b"{not json", None),
        (b"[1, 2]", None),
        (b'{"messages": [{"role": "user", "content": "x"}]}', "model"),
        (b'{"model": 5, "messages": [{"role": "user", "content": "x"}]}', "model"),
        (b'{"model": "m"}', "messages"),
        (b'{"model": "m", "messages": []}', "messages"),
        (b'{"model": "m", "messages": [{"role": "wizard"}]}', "messages[0]"),
        (b'{"model": "m", "messages": [{"role": "user"}], "stream": "yes"}', "stream"),
        (b'{"model": "m", "messages": [{"role": "user"}], "tools": {"a": 1}}', "tools"),
        (
            b'{"model": "m", "messages": [{"role": "user"}], "tools": [{"type": "function"}]}',
            "tools[0]",
        ),
        (
            b'{"model": "m", "messages": [{"role": "user"}], "toolwire": {"bogus": 1}}',
            "toolwire.bogus",
        ),
        (b'{"model": "m", "messages": [{"role": "user", "content": NaN}]}', None),
        (b'{"model": "m", "messages": [{"role": "user"}], "tool_choice": 5}', "tool_choice"),
        (b'{"model": "m", "messages": [{"role": "user"}], "max_tokens": "abc"}', "max_tokens"),
        (
            b'{"model": "m", "messages": [{"role": "user"}], "stream": true,'
            b' "stream_options": "usage"}',
            "stream_options",
        ),
        (
            b'{"model": "m", "messages": [{"role": "user"},'
            b' {"role": "tool", "tool_call_id": "c1", "content": "r"}]}',
            "messages[1].tool_call_id",
        ),
        (
            b'{"model": "m", "messages": [{"role": "user"},'
            b' {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function"}]}]}',
            "messages[1].tool_calls[0].function",
        ),
        (
            b'{"model": "m", "messages": [{"role": "user"}, {"role": "assistant",'
            b' "tool_calls": [{"id": "c1", "function": {"arguments": "{}"}}]}]}',
            "messages[1].tool_calls[0].function.name",
        ),
        (
            b'{"model": "m", "messages": [{"role": "tool", "content": "r"}]}',
            "messages[0].tool_call_id",
        ),
        (b'{"model": "m", "messages": [{"role": "user"}], "temperature": 9}', "temperature"),
    ],
)
async def test_malformed_requests_are_400(
    make_proxy, upstream: FakeUpstream, body: bytes, param
) -> None:
    async with make_proxy(registry_with()) as proxy:
        status, payload = await _post(proxy.base_url, body)
    assert status == 400
    assert payload["error"]["type"] == "invalid_request_error"
    assert payload["error"]["param"] == param
    assert payload["error"]["message"]
    assert upstream.requests == []


async def test_oversized_body_is_413(make_proxy, upstream: FakeUpstream) -> None:
    big = b'{"model": "m", "messages": [{"role": "user", "content": "' + b"x" * 5000 + b'"}]}'
    async with make_proxy(registry_with(), server={"max_body_bytes": 4096}) as proxy:
        status, payload = await _post(proxy.base_url, big)
    assert status == 413
    assert payload["error"]["code"] == "request_too_large"


async def test_unknown_model_is_404(make_proxy, upstream: FakeUpstream) -> None:
    async with make_proxy(registry_with(), upstream={"models": ["fake-*"]}) as proxy:
        with pytest.raises(openai.NotFoundError) as caught:
            await ask(proxy.client, stream=False, model="gpt-unknown", messages=USER)
    assert caught.value.code == "model_not_found"


async def test_unknown_route_is_openai_shaped(make_proxy, upstream: FakeUpstream) -> None:
    async with (
        make_proxy() as proxy,
        aiohttp.ClientSession() as session,
        session.get(f"{proxy.base_url}/nothing-here") as response,
    ):
        assert response.status == 404
        assert "error" in await response.json()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_upstream_4xx_passes_through(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(Reply.error(400, "This model's maximum context length is 8192 tokens"))
    async with make_proxy(registry_with()) as proxy:
        with pytest.raises(openai.BadRequestError) as caught:
            await ask(proxy.client, stream=stream, messages=USER)
    assert "maximum context length" in caught.value.message


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_upstream_500_is_502(make_proxy, upstream: FakeUpstream, stream: bool) -> None:
    upstream.script(Reply.error(500, "CUDA out of memory", type="server_error"))
    async with make_proxy(registry_with()) as proxy:
        with pytest.raises(openai.APIStatusError) as caught:
            await ask(proxy.client, stream=stream, messages=USER)
    assert caught.value.status_code == 502
    assert "CUDA out of memory" in caught.value.message


async def test_unreachable_upstream_is_502(make_proxy, upstream: FakeUpstream) -> None:
    async with make_proxy(upstream={"base_url": "http://127.0.0.1:9/v1"}) as proxy:
        with pytest.raises(openai.APIStatusError) as caught:
            await ask(proxy.client, stream=False, messages=USER)
    assert caught.value.status_code == 502
    assert "unreachable" in caught.value.message


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_silent_upstream_is_504(make_proxy, upstream: FakeUpstream, stream: bool) -> None:
    upstream.script(Reply.hang())
    async with make_proxy(upstream={"first_byte_timeout_s": 0.3}) as proxy:
        with pytest.raises(openai.APIStatusError) as caught:
            await ask(proxy.client, stream=stream, messages=USER)
    assert caught.value.status_code == 504
    assert await upstream.wait_closed(5)


async def test_upstream_stalling_mid_stream_ends_with_error_chunk(
    make_proxy, upstream: FakeUpstream
) -> None:
    upstream.script(Reply.stream_then_hang("partial answer"))
    async with make_proxy(upstream={"idle_timeout_s": 0.3}) as proxy:
        stream = await proxy.client.chat.completions.create(model="m", messages=USER, stream=True)
        seen = []
        with pytest.raises(openai.APIError) as caught:
            async for chunk in stream:
                seen.append(chunk)
    assert "stalled" in str(caught.value)
    assert "".join(c.choices[0].delta.content or "" for c in seen if c.choices) == "partial answer"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_upstream_garbage_is_502(make_proxy, upstream: FakeUpstream, stream: bool) -> None:
    upstream.script(Reply.garbage())
    async with make_proxy() as proxy:
        with pytest.raises(openai.APIError):
            await ask(proxy.client, stream=stream, messages=USER)


async def test_upstream_drop_mid_stream_is_error_chunk(make_proxy, upstream: FakeUpstream) -> None:
    upstream.script(Reply.drop(after_chunks=3))
    async with make_proxy() as proxy:
        stream = await proxy.client.chat.completions.create(model="m", messages=USER, stream=True)
        with pytest.raises(openai.APIError):
            async for _ in stream:
                pass


async def test_vendor_fields_stay_home(make_proxy, upstream: FakeUpstream) -> None:
    upstream.script(Reply.text("ok"))
    messages = [{"role": "user", "content": "hi", "toolwire": {"stopped_by": "x"}}]
    async with make_proxy(registry_with()) as proxy:
        await ask(proxy.client, stream=False, messages=messages, extra_body={"toolwire": {}})
    sent = upstream.requests[0]
    assert "toolwire" not in sent
    assert all("toolwire" not in m for m in sent["messages"])


@pytest.mark.parametrize(
    "body",
    [
        b'{"model": "m", "messages": [{"role": ["user"], "content": "x"}]}',
        b'{"model": "m", "messages": [{"role": {"a": 1}}]}',
    ],
)
async def test_unhashable_role_is_400_not_500(make_proxy, upstream: FakeUpstream, body) -> None:
    async with make_proxy(registry_with()) as proxy:
        status, payload = await _post(proxy.base_url, body)
    assert status == 400
    assert payload["error"]["param"] == "messages[0]"


async def test_verdict_shaped_content_with_odd_parts_is_harmless(
    make_proxy, upstream: FakeUpstream
) -> None:
    body = (
        b'{"model": "m", "messages": [{"role": "user", "content": "x"},'
        b'{"role": "assistant", "tool_calls": [{"id": "x", "function": {"name": "lookup"}}]},'
        b'{"role": "tool", "tool_call_id": "x", "content": [{"type": "text", "text": 5}]}]}'
    )
    async with make_proxy(registry_with()) as proxy:
        status, _ = await _post(proxy.base_url, body)
    assert status == 200


async def test_an_upstream_wanting_a_key_the_edge_kept_is_a_502_saying_so(
    make_proxy, upstream: FakeUpstream
) -> None:
    # Auth on and no upstream api_key: the client's key stays home, so the upstream's 401 is
    # the proxy's configuration to fix, not the client's key to blame.
    upstream.script(Reply.error(401, "missing api key", type="authentication_error"))
    auth = {"keys": [{"name": "app", "key": "app-key-0123456789"}]}
    async with make_proxy(auth=auth) as proxy:
        client = proxy.client.with_options(api_key="app-key-0123456789")
        with pytest.raises(openai.APIStatusError) as caught:
            await ask(client, stream=False, messages=USER)
    assert caught.value.status_code == 502
    assert "wants a key (401) and the request carried none" in caught.value.message
    assert "authorization" not in upstream.headers[0]
