"""Every upstream format through the real server, with the official `openai` SDK as client.

For Anthropic, Gemini and Responses upstreams (their fakes are as strict as the services):
a Chat Completions and a Responses request, streamed and not, run two tool rounds with
registry tools, hand back a client tool, and finish once the client answers it. The
provider's thinking data (Anthropic signatures, Gemini thoughtSignature, Responses
reasoning items) comes back to the provider on the next round.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from anthropic import AsyncAnthropic

from testing.anthropic_upstream import FakeAnthropic
from testing.gemini_upstream import FakeGemini, signature
from testing.provider_server import ProviderFake, Reply
from testing.responses_upstream import FakeResponses
from tests.conftest import Proxy, serve_proxy
from tests.e2e.answers import ask
from tests.e2e.responses_client import items, respond
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

MODEL = "m"
USER = "Where is order 7, and what is the weather in Paris?"
LOOKUP_PARAMETERS = {"type": "object", "properties": {"order_id": {"type": "string"}}}
CHAT_LOOKUP = {
    "type": "function",
    "function": {"name": "lookup_order", "parameters": LOOKUP_PARAMETERS},
}
RESPONSES_LOOKUP = {"type": "function", "name": "lookup_order", "parameters": LOOKUP_PARAMETERS}
SCRIPT = (
    Reply.answer(
        "Let me look.",
        calls=[("t_get_weather", {"city": "Paris"})],
        thinking="Weather first.",
        signature="sig-1",
    ),
    Reply.answer(calls=[("t_add", {"a": 2, "b": 3})]),
    Reply.answer(calls=[("lookup_order", {"order_id": "7"})]),
    Reply.answer("Order 7 ships today; Paris is sunny."),
)


def _anthropic_kept(request: dict[str, Any]) -> bool:
    first = request["messages"][1]["content"][0]
    return first == {"type": "thinking", "thinking": "Weather first.", "signature": "sig-1"}


def _gemini_kept(request: dict[str, Any]) -> bool:
    parts = [p for c in request["contents"] for p in c["parts"]]
    return any(p.get("thoughtSignature") == signature("sig-1") for p in parts)


def _responses_kept(request: dict[str, Any]) -> bool:
    return any(i.get("encrypted_content") == "sig-1" for i in request["input"])


FORMATS: dict[str, tuple[type[ProviderFake], Callable[[dict[str, Any]], bool]]] = {
    "anthropic": (FakeAnthropic, _anthropic_kept),
    "gemini": (FakeGemini, _gemini_kept),
    "openai-responses": (FakeResponses, _responses_kept),
}


@contextlib.asynccontextmanager
async def proxied(upstream_format: str) -> AsyncIterator[tuple[ProviderFake, Proxy]]:
    fake_class, _ = FORMATS[upstream_format]
    async with fake_class() as fake:
        fake.script(*SCRIPT)
        upstream = {
            "name": "up",
            "base_url": fake.base_url,
            "format": upstream_format,
            "api_key": "upstream-key",
            "models": ["*"],
        }
        async with serve_proxy({"upstreams": [upstream]}, registry_with()) as proxy:
            yield fake, proxy


def _check_rounds(fake: ProviderFake, upstream_format: str) -> None:
    _, kept = FORMATS[upstream_format]
    assert len(fake.requests) == 4
    assert kept(fake.requests[1]), "the thinking data did not come back to the provider"
    assert kept(fake.requests[3]), "the thinking data was lost across the client's round"
    assert "toolwire_provider" not in json.dumps(fake.requests)


@pytest.mark.parametrize("upstream_format", list(FORMATS))
async def test_chat_front(stream: bool, upstream_format: str) -> None:
    async with proxied(upstream_format) as (fake, proxy):
        messages: list[dict[str, Any]] = [{"role": "user", "content": USER}]
        first = await ask(
            proxy.client, stream=stream, model=MODEL, messages=messages, tools=[CHAT_LOOKUP]
        )
        assert first.finish_reason == "tool_calls"
        (call,) = first.tool_calls
        assert call["function"]["name"] == "lookup_order"
        assert json.loads(call["function"]["arguments"]) == {"order_id": "7"}
        messages += [
            {
                "role": "assistant",
                "content": first.content or None,
                "tool_calls": [
                    {"id": call["id"], "type": "function", "function": call["function"]}
                ],
            },
            {"role": "tool", "tool_call_id": call["id"], "content": "ships today"},
        ]
        second = await ask(
            proxy.client, stream=stream, model=MODEL, messages=messages, tools=[CHAT_LOOKUP]
        )
    assert second.content == "Order 7 ships today; Paris is sunny."
    assert second.finish_reason == "stop"
    _check_rounds(fake, upstream_format)


@pytest.mark.parametrize("upstream_format", list(FORMATS))
async def test_responses_front(stream: bool, upstream_format: str) -> None:
    async with proxied(upstream_format) as (fake, proxy):
        first = await respond(
            proxy.client, stream=stream, model=MODEL, input=USER, tools=[RESPONSES_LOOKUP]
        )
        (call,) = items(first, "function_call")
        assert call.name == "lookup_order" and json.loads(call.arguments) == {"order_id": "7"}
        output = {"type": "function_call_output", "call_id": call.call_id, "output": "ships"}
        second = await respond(
            proxy.client,
            stream=stream,
            model=MODEL,
            previous_response_id=first.id,
            input=[output],
            tools=[RESPONSES_LOOKUP],
        )
    assert second.output_text == "Order 7 ships today; Paris is sunny."
    _check_rounds(fake, upstream_format)


MESSAGES_LOOKUP = {"name": "lookup_order", "input_schema": LOOKUP_PARAMETERS}


@pytest.mark.parametrize("upstream_format", list(FORMATS))
async def test_messages_front(stream: bool, upstream_format: str) -> None:
    """The Anthropic front over every upstream format, with the official anthropic SDK."""
    async with proxied(upstream_format) as (fake, proxy):
        base = proxy.base_url.removesuffix("/v1")
        async with AsyncAnthropic(base_url=base, api_key="unused", max_retries=0) as client:
            question = [{"role": "user", "content": USER}]
            first = await _message(client, stream, question)
            assert first.stop_reason == "tool_use"
            (use,) = [b for b in first.content if b.type == "tool_use"]
            assert use.name == "lookup_order" and use.input == {"order_id": "7"}
            follow_up = [
                *question,
                {"role": "assistant", "content": [b.model_dump() for b in first.content]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "ok"}],
                },
            ]
            second = await _message(client, stream, follow_up)
    texts = [b.text for b in second.content if b.type == "text"]
    assert texts == ["Order 7 ships today; Paris is sunny."]
    _check_rounds(fake, upstream_format)


async def _message(client: AsyncAnthropic, stream: bool, messages: list[Any]) -> Any:
    request: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 512,
        "messages": messages,
        "tools": [MESSAGES_LOOKUP],
    }
    if not stream:
        return await client.messages.create(**request)
    async with client.messages.stream(**request) as events:
        return await events.get_final_message()
