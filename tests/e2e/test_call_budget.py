"""The product's Python calls per request, held to a budget: what every request pays, counted.

Issue 29 began with a plain request that had become twice as expensive, a little per feature,
with nothing measuring the sum. Timing cannot be asserted in a test; calls can. Each case
serves requests through the real server over loopback (the SDK as client, the fake upstream
answering) and counts the Python frames of the product's own code (`proxy/`, `registry/`)
that run while one request is served: calls, and each resumption of a coroutine, as cProfile
counts them. The fewest over several requests is the request's own: the event loop's other
work (a timer, a read split in two) only adds.

A change that fails here adds work to every request. When it must, raise the budget in the
same commit and say in its message what the calls pay for, with `bench/instructions.py`'s
count before and after.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

import pytest
from anthropic import AsyncAnthropic

from testing.anthropic_upstream import FakeAnthropic
from testing.gemini_upstream import FakeGemini
from testing.provider_server import ProviderFake
from testing.provider_server import Reply as ProviderReply
from testing.upstream import FakeUpstream, Reply
from tests.conftest import REPO, ProxyFactory, serve_proxy
from tests.e2e.tools import registry_with

_OWN = (str(REPO / "proxy") + "/", str(REPO / "registry") + "/")
"""Where the product's code lives: frames of other code (the SDK, the fake upstream,
uvicorn, asyncio) are not counted."""
_WARM = 4
"""Requests before counting: caches filled (a model's codec, the toolset), pools opened."""
_COUNTED = 12

BUDGETS = {
    "chat": 94,
    "chat-stream": 183,
    "chat-tool-round": 314,
    "responses": 119,
    "messages": 111,
    "chat-over-anthropic": 103,
    "chat-over-gemini": 125,
}
"""Calls per request, at most: each case's count at the commit that set it, plus two or
three (a change that adds a call to every request fits once, not twice)."""
_SLACK = 0.9
"""A count under this share of its budget fails too, asking for the budget to come down to
it: a budget far above the count would let the work come back unnoticed."""


class _Calls:
    """Counts the product's frames entered (or resumed) on this thread while `count` awaits
    one request."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def _hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            if code.co_filename.startswith(_OWN):
                name = code.co_filename.removeprefix(str(REPO) + "/")
                self.calls[f"{name}:{code.co_qualname}"] += 1

    async def count(self, request: Callable[[], Awaitable[object]]) -> Counter[str]:
        self.calls = Counter()
        sys.setprofile(self._hook)
        try:
            await request()
        finally:
            sys.setprofile(None)
        return self.calls


async def _fewest(request: Callable[[], Awaitable[object]]) -> Counter[str]:
    counter = _Calls()
    for _ in range(_WARM):
        await request()
    counted = [await counter.count(request) for _ in range(_COUNTED)]
    return min(counted, key=lambda calls: calls.total())


def _check(case: str, calls: Counter[str]) -> None:
    total = calls.total()
    busiest = "\n".join(f"{n:5d}  {name}" for name, n in calls.most_common(30))
    budget = BUDGETS[case]
    assert total <= budget, (
        f"{case}: {total} calls per request, over the budget of {budget}; the busiest:\n{busiest}"
    )
    assert total >= budget * _SLACK, (
        f"{case}: {total} calls per request, well under the budget of {budget}: lower the "
        f"budget to {total + 2} (or, if that many is wrong, the count misses calls):\n{busiest}"
    )


@pytest.fixture
def quiet_upstream(upstream: FakeUpstream) -> FakeUpstream:
    """The fake upstream, answering every request with the same short text."""
    upstream.default = Reply.text("The answer is four.")
    return upstream


async def test_a_plain_chat_request_stays_within_its_calls(
    make_proxy: ProxyFactory, quiet_upstream: FakeUpstream
) -> None:
    async with make_proxy(registry_with()) as proxy:
        client = proxy.client
        messages = [{"role": "user", "content": "What is two and two?"}]

        async def ask() -> None:
            answer = await client.chat.completions.create(model="fake-model", messages=messages)
            assert answer.choices[0].message.content == "The answer is four."

        async def ask_streamed() -> None:
            stream = await client.chat.completions.create(
                model="fake-model", messages=messages, stream=True
            )
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            assert text == "The answer is four."

        _check("chat", await _fewest(ask))
        _check("chat-stream", await _fewest(ask_streamed))


async def test_a_tool_round_stays_within_its_calls(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """One call of a proxy tool (Python, in-process) and the answer after it."""
    async with make_proxy(registry_with()) as proxy:
        messages = [{"role": "user", "content": "What is two and two?"}]

        async def ask() -> None:
            upstream.script(Reply.tool_calls([("t_add", {"a": 2, "b": 2})]), Reply.text("It is 4."))
            answer = await proxy.client.chat.completions.create(
                model="fake-model", messages=messages
            )
            assert answer.choices[0].message.content == "It is 4."

        _check("chat-tool-round", await _fewest(ask))
        assert upstream.requests[-1]["messages"][-1]["content"] == "4"  # the tool ran


async def test_responses_and_messages_requests_stay_within_their_calls(
    make_proxy: ProxyFactory, quiet_upstream: FakeUpstream
) -> None:
    async with make_proxy(registry_with()) as proxy:
        root = proxy.base_url.removesuffix("/v1")
        anthropic = AsyncAnthropic(base_url=root, api_key="unused", max_retries=0)

        async def respond() -> None:
            answer = await proxy.client.responses.create(
                model="fake-model", input="What is two and two?", store=False
            )
            assert answer.output_text == "The answer is four."

        async def message() -> None:
            answer = await anthropic.messages.create(
                model="fake-model",
                max_tokens=64,
                messages=[{"role": "user", "content": "What is two and two?"}],
            )
            assert answer.content[0].text == "The answer is four."  # type: ignore[union-attr]

        try:
            _check("responses", await _fewest(respond))
            _check("messages", await _fewest(message))
        finally:
            await anthropic.close()


@pytest.mark.parametrize("kind", ["anthropic", "gemini"])
async def test_a_chat_request_over_a_translating_upstream_stays_within_its_calls(
    kind: str,
) -> None:
    """The Chat front over an Anthropic and a Gemini upstream: the request and the answer
    translated, each way."""
    fake: ProviderFake = FakeAnthropic() if kind == "anthropic" else FakeGemini()
    fake.default = ProviderReply.answer("The answer is four.")
    async with fake:
        upstream = {"name": "up", "base_url": fake.base_url, "format": kind, "models": ["*"]}
        async with serve_proxy({"upstreams": [upstream]}, registry_with()) as proxy:
            messages = [{"role": "user", "content": "What is two and two?"}]

            async def ask() -> None:
                answer = await proxy.client.chat.completions.create(model="m", messages=messages)
                assert answer.choices[0].message.content == "The answer is four."

            _check(f"chat-over-{kind}", await _fewest(ask))
