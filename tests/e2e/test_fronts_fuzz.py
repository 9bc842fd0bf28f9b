"""Mutated requests on the three fronts (Chat Completions, Responses, Messages), streamed and
not, through the real server over loopback, answered by the built-in demo model and its tools,
and by an Anthropic and a Gemini upstream (testing's fakes, which check what they are sent as
the hosted APIs do), so that every request and answer is translated: whatever the body, no
answer is a server error, an error is JSON in the front's own shape, an answer is its front's
object, and a stream ends as its format ends, every event JSON.

The cases are seeded: the same bodies on every run. Each starts from a valid request that
uses the front's features (tools, a tool choice, stream options, a system prompt, reasoning)
and changes one to three of its fields or items: removed, or replaced by a value of another
kind (null, a number past 64 bits, an empty or huge string, a NUL, a list, an object).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

from testing.anthropic_upstream import FakeAnthropic
from testing.gemini_upstream import FakeGemini
from testing.provider_server import ProviderFake, Reply
from tests.conftest import serve_proxy

pytestmark = pytest.mark.asyncio(loop_scope="module")

CASES = 120
"""Mutated bodies per front."""
TOOLS = [{"python": "examples/tools.py", "namespace": "demo"}]
TOOL = {"type": "object", "properties": {"city": {"type": "string"}}}
BODIES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {
        "model": "toolwire-demo",
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "What is the weather in Paris?"},
        ],
        "temperature": 0.2,
        "max_tokens": 100,
        "tools": [{"type": "function", "function": {"name": "lookup", "parameters": TOOL}}],
        "tool_choice": "auto",
        "stream_options": {"include_usage": True},
    },
    "/v1/responses": {
        "model": "toolwire-demo",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Time in Tokyo?"}]}],
        "instructions": "Answer briefly.",
        "tools": [{"type": "function", "name": "lookup", "parameters": TOOL}],
        "store": True,
        "max_output_tokens": 100,
        "reasoning": {"effort": "low"},
        "text": {"format": {"type": "text"}},
    },
    "/v1/messages": {
        "model": "toolwire-demo",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "Answer briefly."}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}],
        "tools": [{"name": "lookup", "input_schema": TOOL}],
        "tool_choice": {"type": "auto"},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    },
}
ODD: list[Any] = [
    None,
    0,
    -1,
    1e308,
    True,
    "",
    "x" * 5000,
    "\u0000",
    [],
    {},
    [None],
    [[]],
    {"type": None},
    [{"role": "user"}],
    2**70,
    3.5,
    "toolwire-demo",
]
STREAM_ENDS = {
    "/v1/chat/completions": ("data: [DONE]",),
    "/v1/responses": (
        "event: response.completed",
        "event: response.failed",
        "event: response.incomplete",
        "event: error",
    ),
    "/v1/messages": ("event: message_stop", "event: error"),
}


def _places(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every field's and item's path in `value`."""
    if path:
        yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _places(item, (*path, index))


def _mutated(body: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    for _ in range(rng.randint(1, 3)):
        places = list(_places(changed))
        if not places:
            break
        path = rng.choice(places)
        parent: Any = changed
        for step in path[:-1]:
            parent = parent[step]
        if rng.random() < 0.3:
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(ODD))
    if rng.random() < 0.5:
        changed["stream"] = True
    return changed


def _cases() -> list[tuple[str, dict[str, Any]]]:
    rng = random.Random(29)
    return [(path, _mutated(body, rng)) for path, body in BODIES.items() for _ in range(CASES)]


def _check_error(path: str, status: int, answer: dict[str, Any]) -> None:
    if path == "/v1/messages":
        assert answer["type"] == "error", answer
        error = answer["error"]
        assert isinstance(error["type"], str), answer
    else:
        error = answer["error"]
    assert isinstance(error["message"], str) and error["message"], (status, answer)


def _check_answer(path: str, answer: dict[str, Any]) -> None:
    if path == "/v1/chat/completions":
        assert answer["object"] == "chat.completion" and answer["choices"], answer
    elif path == "/v1/responses":
        assert answer["object"] == "response" and "output" in answer, answer
    else:
        assert answer["type"] == "message" and "content" in answer, answer


def _check_stream(path: str, text: str) -> None:
    events = [e for e in text.split("\n\n") if e.strip() and not e.startswith(":")]
    assert events, text
    last = events[-1]
    assert any(end in last for end in STREAM_ENDS[path]), last[:300]
    for event in events:
        for line in event.split("\n"):
            if line.startswith("data: ") and line != "data: [DONE]":
                json.loads(line.removeprefix("data: "))


@pytest.mark.parametrize("upstream", ["demo", "anthropic", "gemini"])
async def test_mutated_requests_get_answers_or_errors_in_their_fronts_shape(
    upstream: str,
) -> None:
    if upstream == "demo":
        await _fuzz({"name": "demo", "base_url": "demo"})
        return
    fake: ProviderFake = FakeAnthropic() if upstream == "anthropic" else FakeGemini()
    fake.default = Reply.answer("The weather in Paris is mild.")
    async with fake:
        await _fuzz(
            {"name": "up", "base_url": fake.base_url, "format": upstream, "api_key": fake.api_key}
        )


async def _fuzz(upstream: dict[str, Any]) -> None:
    async with (
        serve_proxy({"upstreams": [upstream], "tools": TOOLS}) as proxy,
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session,
    ):
        root = proxy.base_url.removesuffix("/v1")
        headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
        for path, body in _cases():
            data = json.dumps(body).encode()
            async with session.post(root + path, data=data, headers=headers) as response:
                status, kind = response.status, response.content_type
                text = await response.text()
            case = f"{path} {status} {data[:300]!r}"
            assert status < 500, case
            if kind == "text/event-stream":
                assert status == 200, case
                _check_stream(path, text)
                continue
            assert kind == "application/json", case
            answer = json.loads(text)
            if status >= 400:
                _check_error(path, status, answer)
            else:
                _check_answer(path, answer)
