"""Anthropic and Gemini streams' text found by their bytes (`proxy/upstreams/text_scanners.py`)
reaches clients as the codecs make it: the same streamed answer through the Chat front (the
official `openai` SDK) and the same message through the Messages front (`anthropic`), with the
scanners on and learning nothing, for text of every sort of character, thinking, tool calls, a
registry tool round and an error mid-stream."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from anthropic import APIError as AnthropicError
from anthropic import AsyncAnthropic
from openai import APIError as OpenAIError

from proxy.upstreams.text_scanners import FieldTextScanner
from testing.anthropic_upstream import FakeAnthropic
from testing.gemini_upstream import FakeGemini
from testing.provider_server import Reply
from tests.conftest import Proxy, serve_proxy
from tests.e2e.tools import registry_with

TRICKY = 'Quotes " and \\ backslashes, \\" both, a tab\there, a line\nbreak, été, 😀, \u2028 done.'
CLOCK = {"type": "function", "function": {"name": "read_clock", "parameters": {"type": "object"}}}
SCRIPTS: dict[str, tuple[Reply, ...]] = {
    "tricky text": (Reply.answer(TRICKY, usage=(12, 30)),),
    "thinking, text and a client call": (
        Reply.answer(
            "I will read it.", calls=[("read_clock", {})], thinking="Need time.", signature="s"
        ),
    ),
    "a registry tool round": (
        Reply.answer("Let me add.", calls=[("t_add", {"a": 2, "b": 3})]),
        Reply.answer("It is five, as added."),
    ),
    "an error mid-stream": (Reply.stream_error("overloaded, try later"),),
}


@contextlib.asynccontextmanager
async def provider(kind: str, script: str) -> AsyncIterator[Proxy]:
    async with (FakeAnthropic if kind == "anthropic" else FakeGemini)() as fake:
        fake.script(*SCRIPTS[script])
        upstream = {
            "name": "up",
            "base_url": fake.base_url,
            "format": kind,
            "api_key": "upstream-key",
            "models": ["*"],
        }
        async with serve_proxy({"upstreams": [upstream]}, registry_with()) as proxy:
            yield proxy


async def chat_chunks(proxy: Proxy) -> Any:
    """What a Chat client folds of the stream: each delta field's text joined (the pieces
    follow the network's reads), the tool calls (their ids, the proxy's, aside), the finish
    reason and the usage."""
    stream = await proxy.client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        tools=[CLOCK],
        stream=True,
        stream_options={"include_usage": True},
    )
    texts: dict[str, str] = {}
    calls: dict[int, dict[str, str]] = {}
    ends = []
    async for chunk in stream:
        if chunk.usage is not None:
            ends.append(chunk.usage.model_dump(exclude_none=True))
        for choice in chunk.choices:
            delta = choice.delta.model_dump(exclude_none=True)
            for call in delta.pop("tool_calls", []):
                into = calls.setdefault(call["index"], {})
                for key, value in call.get("function", {}).items():
                    into[key] = into.get(key, "") + value
            for key, value in delta.items():
                texts[key] = texts.get(key, "") + str(value)
            if choice.finish_reason is not None:
                ends.append(choice.finish_reason)
    return texts, calls, ends


async def message(proxy: Proxy) -> Any:
    """The message an Anthropic client's stream helper folds, and its text events' text."""
    base = proxy.base_url.removesuffix("/v1")
    tool = {"name": "read_clock", "input_schema": {"type": "object"}}
    async with AsyncAnthropic(base_url=base, api_key="unused", max_retries=0) as client:
        request = {"role": "user", "content": "hi"}
        async with client.messages.stream(
            model="m", max_tokens=300, messages=[request], tools=[tool]
        ) as events:
            texts = [event.text async for event in events if event.type == "text"]
            final = (await events.get_final_message()).model_dump(exclude_none=True)
    final.pop("id")
    for block in final["content"]:
        block.pop("id", None)  # a call handed to the client gets an id of the proxy's
    return "".join(texts), final


async def outcome(call: Callable[[], Awaitable[Any]]) -> Any:
    try:
        return await call()
    except (OpenAIError, AnthropicError) as exc:
        return ("error", type(exc).__name__, getattr(exc, "message", str(exc)))


FRONTS = {"chat": chat_chunks, "messages": message}


@pytest.mark.parametrize("script", list(SCRIPTS))
@pytest.mark.parametrize("front", list(FRONTS))
@pytest.mark.parametrize("kind", ["anthropic", "gemini"])
async def test_clients_read_what_the_codec_makes(
    kind: str, front: str, script: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = []
    for scanning in (True, False):
        if not scanning:
            monkeypatch.setattr(FieldTextScanner, "_learn", lambda *args: None)
        async with provider(kind, script) as proxy:
            seen.append(await outcome(lambda: FRONTS[front](proxy)))
    assert seen[0] == seen[1]
    if script == "tricky text":
        texts = seen[0][0]
        assert (texts["content"] if front == "chat" else texts) == TRICKY
