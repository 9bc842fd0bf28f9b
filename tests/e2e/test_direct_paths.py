"""What clients get is the same whether the direct paths or llm-rosetta convert.

Plain text deltas of Anthropic and Gemini streams are made into Chat chunks without
rosetta, and so are plain requests to those upstreams and their plain answers; the
Responses and Messages fronts convert plain text requests without it.
Each scenario here runs twice against the same upstream script, once as served and once
with the direct paths switched off, through the real server and the official `openai` and
`anthropic` SDKs: text, a registry tool round, usage, and an error mid-stream, streamed
and not. The answers must agree (ids and times apart), and so must the requests the
upstream received.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from anthropic import APIError as AnthropicError
from anthropic import AsyncAnthropic
from openai import APIError as OpenAIError

from proxy.fronts import conversion as fronts_conversion
from proxy.fronts.responses import handler as responses_handler
from proxy.upstreams import anthropic_answers, direct_requests, gemini_answers
from proxy.upstreams.conversion import DirectText
from testing.anthropic_upstream import FakeAnthropic
from testing.gemini_upstream import FakeGemini
from testing.provider_server import ProviderFake, Reply
from testing.upstream import FakeUpstream
from testing.upstream import Reply as ChatReply
from tests.conftest import Proxy, serve_proxy
from tests.e2e.answers import ask
from tests.e2e.responses_client import respond
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

TEXT = "Paris is sunny today, and the order ships tomorrow morning by the first van."
QUESTION = "What is the weather in Paris?"
PROVIDER_SCRIPT = (
    Reply.answer(
        "Let me look.", calls=[("t_get_weather", {"city": "Paris"})], thinking="Hm.", signature="s1"
    ),
    Reply.answer(TEXT, usage=(40, 17)),
    Reply.stream_error("overloaded, try later"),
)
CHAT_SCRIPT = (
    ChatReply.tool_calls([("t_add", {"a": 2, "b": 3})]),
    ChatReply.text(TEXT, usage=(40, 17)),
)
CHAT_FAILURES = {True: ChatReply.drop(after_chunks=3), False: ChatReply.error(400, "no such")}
"""The upstream fails mid-stream (streamed), or with an error status (not streamed)."""


@contextlib.contextmanager
def slow_paths(monkeypatch: pytest.MonkeyPatch, slow: bool) -> Any:
    """With `slow`, every event and request goes through llm-rosetta."""
    with monkeypatch.context() as patch:
        if slow:
            patch.setattr(DirectText, "chunk", lambda self, index, text: None)
            patch.setattr(responses_handler, "direct_responses", lambda body, items: None)
            patch.setattr(fronts_conversion, "_direct_messages", lambda body: None)
            patch.setattr(direct_requests, "anthropic_request", lambda chat, kept: None)
            patch.setattr(direct_requests, "gemini_request", lambda chat, kept: None)
            patch.setattr(anthropic_answers, "anthropic_whole", lambda payload, usage: None)
            patch.setattr(gemini_answers, "gemini_whole", lambda payload, usage: None)
            for stream in (anthropic_answers.AnthropicStream, gemini_answers.GeminiStream):
                patch.setattr(stream, "event", lambda self, event: None)
        yield


@contextlib.asynccontextmanager
async def provider(kind: str) -> AsyncIterator[tuple[ProviderFake, Proxy]]:
    fake_class = FakeAnthropic if kind == "anthropic" else FakeGemini
    async with fake_class() as fake:
        fake.script(*PROVIDER_SCRIPT)
        upstream = {
            "name": "up",
            "base_url": fake.base_url,
            "format": kind,
            "api_key": "upstream-key",
            "models": ["*"],
        }
        async with serve_proxy({"upstreams": [upstream]}, registry_with()) as proxy:
            yield fake, proxy


@contextlib.asynccontextmanager
async def chat_upstream(stream: bool) -> AsyncIterator[tuple[FakeUpstream, Proxy]]:
    async with FakeUpstream() as fake:
        fake.script(*CHAT_SCRIPT, CHAT_FAILURES[stream])
        upstream = {"name": "up", "base_url": fake.base_url, "models": ["*"]}
        async with serve_proxy({"upstreams": [upstream]}, registry_with()) as proxy:
            yield fake, proxy


async def _failure(call: Callable[[], Awaitable[Any]]) -> Any:
    try:
        return ("answer", await call())
    except (OpenAIError, AnthropicError) as exc:
        return ("error", type(exc).__name__, getattr(exc, "message", str(exc)))


async def _both(
    monkeypatch: pytest.MonkeyPatch, run: Callable[[], Awaitable[Any]]
) -> tuple[Any, Any]:
    with slow_paths(monkeypatch, False):
        direct = await run()
    with slow_paths(monkeypatch, True):
        slow = await run()
    return direct, slow


@pytest.mark.parametrize("kind", ["anthropic", "gemini"])
async def test_chat_front_over_converted_upstreams(
    stream: bool, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def run() -> Any:
        async with provider(kind) as (fake, proxy):
            answers = []
            for _ in range(2):  # a tool round and its answer, then an error mid-stream
                outcome = await _failure(
                    lambda: ask(
                        proxy.client,
                        stream=stream,
                        model="m",
                        messages=[{"role": "user", "content": QUESTION}],
                    )
                )
                if outcome[0] == "answer":
                    got = outcome[1]
                    outcome = (got.content, got.finish_reason, got.tool_calls, got.usage)
                answers.append(outcome)
            return answers, _requests(fake.requests)

    direct, slow = await _both(monkeypatch, run)
    assert direct == slow
    (content, finish, calls, _), failed = direct[0]
    assert (content.endswith(TEXT), finish, calls) == (True, "stop", [])
    assert failed[0] == "error"


async def test_responses_front(stream: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    async def run() -> Any:
        async with chat_upstream(stream) as (fake, proxy):
            answers = []
            for _ in range(2):
                outcome = await _failure(
                    lambda: respond(
                        proxy.client,
                        stream=stream,
                        model="fake-model",
                        instructions="Be brief.",
                        input=QUESTION,
                        temperature=0.2,
                        max_output_tokens=300,
                    )
                )
                if outcome[0] == "answer":
                    got = outcome[1]
                    usage = got.usage.model_dump() if got.usage else None
                    outcome = (got.status, got.output_text, usage, got.error)
                answers.append(outcome)
            return answers, _requests(fake.requests)

    direct, slow = await _both(monkeypatch, run)
    assert direct == slow
    (status, text, usage, _), failed = direct[0]
    assert (status, text, usage["input_tokens"]) == ("completed", TEXT, 50)  # both rounds
    assert failed[0] == "error" or failed[0] == "failed"


async def test_messages_front(stream: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    async def run() -> Any:
        async with chat_upstream(stream) as (fake, proxy):
            base = proxy.base_url.removesuffix("/v1")
            async with AsyncAnthropic(base_url=base, api_key="unused", max_retries=0) as client:
                answers = []
                for _ in range(2):
                    outcome = await _failure(lambda: _message(client, stream))
                    if outcome[0] == "answer":
                        got = outcome[1]
                        texts = [b.text for b in got.content if b.type == "text"]
                        usage = (got.usage.input_tokens, got.usage.output_tokens)
                        outcome = (got.stop_reason, texts, usage)
                    answers.append(outcome)
            return answers, _requests(fake.requests)

    direct, slow = await _both(monkeypatch, run)
    assert direct == slow
    (stop, texts, usage), failed = direct[0]
    assert (stop, texts, usage) == ("end_turn", [TEXT], (50, 22))  # both rounds
    assert failed[0] == "error"


async def _message(client: AsyncAnthropic, stream: bool) -> Any:
    request: dict[str, Any] = {
        "model": "fake-model",
        "max_tokens": 300,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": QUESTION}],
    }
    if not stream:
        return await client.messages.create(**request)
    async with client.messages.stream(**request) as events:
        return await events.get_final_message()


def _requests(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The requests an upstream got, without the tool call ids the fakes make up per run."""
    return [_without_ids(r) for r in requests]


_IDS = ("id", "tool_use_id", "tool_call_id")


def _without_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k not in _IDS}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value
