"""An unstreamed Chat turn answered in one upstream call goes to the client as the upstream's
own bytes (`ToolLoop.relay`): the client reads what the slow path (every answer rebuilt)
shows; an answer with tool calls continues the turn without being asked for again."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import orjson
import pytest
from aiohttp import web

from proxy.upstreams import openai_chat
from testing.upstream import FakeUpstream, Reply
from tests.conftest import serve_proxy
from tests.e2e.test_operations import _metrics, _sample, _serve
from tests.e2e.tools import registry_with

USER = [{"role": "user", "content": "hi"}]
CLIENT_TOOL = {
    "type": "function",
    "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}},
}
TOOLWIRE_ID = 9 + 24
"""The length of an id Toolwire makes (`chatcmpl-` and 24 hex digits); the fake upstream's
are longer (a uuid's 32)."""


@contextlib.asynccontextmanager
async def proxy(upstream_url: str) -> AsyncIterator[openai.AsyncOpenAI]:
    config = {
        "upstreams": [{"name": "fake", "base_url": upstream_url, "models": ["*"]}],
    }
    async with serve_proxy(config, registry_with()) as served:
        yield served.client


async def test_a_plain_answer_is_the_upstreams_own(upstream: FakeUpstream) -> None:
    upstream.script(Reply.text("Hello there."))
    async with _serve(upstream) as url, openai.AsyncOpenAI(base_url=url, api_key="x") as client:
        answer = await client.chat.completions.create(model="fake-model", messages=USER)
        samples = await _metrics(url)
    assert answer.choices[0].message.content == "Hello there."
    assert len(answer.id) > TOOLWIRE_ID  # the upstream's id: its bytes were relayed
    assert len(upstream.requests) == 1 and upstream.requests[0].get("tools")
    usage = answer.usage
    assert usage is not None
    tokens = "toolwire_tokens_total"  # the relayed turn is metered as any other
    counted = {
        direction: _sample(samples, tokens, model="fake-model", key="-", direction=direction)
        for direction in ("input", "output")
    }
    assert counted == {"input": usage.prompt_tokens, "output": usage.completion_tokens}


VLLM_ANSWER = {
    "id": "chatcmpl-vllm-0123456789abcdef0123456789abcdef",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "served",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "reasoning_content": None,
                "content": "Paris.",
                "tool_calls": [],
                "refusal": None,
                "function_call": None,
            },
            "logprobs": None,
            "finish_reason": "stop",
            "stop_reason": None,
        }
    ],
    "usage": {
        "prompt_tokens": 12,
        "total_tokens": 14,
        "completion_tokens": 2,
        "prompt_tokens_details": None,
    },
    "prompt_logprobs": None,
    "kv_transfer_params": None,
}


@contextlib.asynccontextmanager
async def vllm_like(answer: dict[str, Any]) -> AsyncIterator[str]:
    """A server answering every chat request with `answer`, as vLLM shapes one; its /v1 URL."""

    async def chat(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=orjson.dumps(answer), content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


async def test_an_answer_with_vllms_null_fields_is_relayed() -> None:
    async with vllm_like(VLLM_ANSWER) as url, proxy(url) as client:
        raw = await client.chat.completions.with_raw_response.create(model="served", messages=USER)
        answer = raw.parse()
    assert raw.http_response.content == orjson.dumps(VLLM_ANSWER)
    assert answer.choices[0].message.content == "Paris."
    assert answer.choices[0].message.tool_calls == []
    assert answer.usage is not None and answer.usage.total_tokens == 14


async def test_a_vendor_value_is_rebuilt_instead() -> None:
    choice = {**VLLM_ANSWER["choices"][0], "stop_reason": "###"}  # type: ignore[index]
    async with vllm_like({**VLLM_ANSWER, "choices": [choice]}) as url, proxy(url) as client:
        answer = await client.chat.completions.create(model="served", messages=USER)
    assert len(answer.id) == TOOLWIRE_ID
    assert answer.choices[0].message.content == "Paris."
    assert "stop_reason" not in answer.choices[0].model_dump()


async def test_an_answer_calling_a_tool_is_not_asked_for_again(upstream: FakeUpstream) -> None:
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 2, "b": 3})], content="Adding. "),
        Reply.text("It is 5."),
    )
    async with proxy(upstream.base_url) as client:
        answer = await client.chat.completions.create(model="fake-model", messages=USER)
    assert answer.choices[0].message.content == "Adding. It is 5."
    assert len(upstream.requests) == 2  # the first answer was used, not asked for twice
    assert upstream.requests[1]["messages"][-1]["content"] == "5"
    assert len(answer.id) == TOOLWIRE_ID


def scripts() -> dict[str, Callable[[], list[Reply]]]:
    return {
        "text": lambda: [Reply.text("Plain words.")],
        "cut by length": lambda: [Reply("text", content="Cut sho", finish_reason="length")],
        "tool round": lambda: [
            Reply.tool_calls([("t_add", {"a": 2, "b": 3})], content="Let me add. "),
            Reply.text("It is 5."),
        ],
        "two tool rounds": lambda: [
            Reply.tool_calls([("t_add", {"a": 2, "b": 3})]),
            Reply.tool_calls([("t_add", {"a": 5, "b": 5})]),
            Reply.text("10."),
        ],
        "client's own tool": lambda: [Reply.tool_calls([("lookup", {"q": "x"})])],
        "an upstream error": lambda: [Reply.error(400, "bad request for the model")],
    }


def client_view(answer: Any) -> dict[str, Any]:
    """What a client reads of an answer, its id and time aside."""
    body = answer.model_dump(exclude_none=True)
    for key in ("id", "created"):
        body.pop(key)
    for call in body["choices"][0]["message"].get("tool_calls", []):
        call.pop("id")
    return body


@pytest.mark.parametrize("script", list(scripts()))
async def test_the_client_reads_what_the_slow_path_shows(
    script: str, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []
    async with proxy(upstream.base_url) as client:
        for relay in (True, False):
            if not relay:
                monkeypatch.setattr(openai_chat, "relayable", lambda payload, model: None)
            upstream.script(*scripts()[script]())
            tools = {"tools": [CLIENT_TOOL]} if script == "client's own tool" else {}
            try:
                answer = await client.chat.completions.create(
                    model="fake-model", messages=USER, **tools
                )
            except openai.APIStatusError as exc:
                seen.append((exc.status_code, exc.body))
            else:
                seen.append(client_view(answer))
    assert seen[0] == seen[1]
