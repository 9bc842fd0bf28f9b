"""A request's objects are freed as it ends, by their references alone: none is left in a
reference cycle for the cyclic collector to find. A cycle per request would keep each
request's objects (its scope, context, stats, cycle, telemetry) alive until a collection,
which then traverses them all: the collector's work would grow with the requests served.

Run on uvloop, as `toolwire serve` runs: asyncio's own loop keeps a cancelled timer, and the
context of the request that made it, until the timer is due, which would hide a cycle."""

from __future__ import annotations

import gc
from collections.abc import Awaitable, Callable, Iterator
from types import CodeType

import pytest
import uvloop

from testing.upstream import FakeUpstream, Reply
from tests.conftest import REPO, serve_proxy
from tests.e2e.tools import registry_with

_PRODUCT = ("proxy.", "registry.", "policies.")
_PRODUCT_FILES = tuple(str(REPO / package) + "/" for package in ("proxy", "registry", "policies"))


def _cyclic_garbage(objects: list[object]) -> list[str]:
    """The product's own objects among what the collector found unreachable: instances of
    its classes, and the frames, coroutines and functions of its code."""
    found = []
    for obj in objects:
        kind = type(obj)
        code = getattr(obj, "f_code", None) or getattr(obj, "cr_code", None)
        code = code or getattr(obj, "__code__", None)
        if kind.__module__.startswith(_PRODUCT):
            found.append(f"{kind.__module__}.{kind.__qualname__}")
        elif isinstance(code, CodeType) and code.co_filename.startswith(_PRODUCT_FILES):
            found.append(f"{kind.__name__} {code.co_qualname}")
    return sorted(set(found))


@pytest.fixture
def saving_garbage() -> Iterator[list[object]]:
    """The cyclic collector off, and what a collection then finds kept (`gc.garbage`)."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


async def _requests_garbage() -> list[str]:
    """The product's objects left in cycles by plain requests, streamed and not, on Chat and
    Responses, and a Chat turn with a tool round: what a collection finds after them, their
    first ones (caches, pools) aside."""
    async with FakeUpstream() as upstream:
        upstream.default = Reply.text("The answer is four.")
        config = {"upstreams": [{"name": "fake", "base_url": upstream.base_url}]}
        messages = [{"role": "user", "content": "What is two and two?"}]
        async with serve_proxy(config, registry_with()) as proxy:
            client = proxy.client

            async def ask() -> None:
                answer = await client.chat.completions.create(model="fake-model", messages=messages)
                assert answer.choices[0].message.content == "The answer is four."

            async def ask_streamed() -> None:
                stream = await client.chat.completions.create(
                    model="fake-model", messages=messages, stream=True
                )
                chunks = [c.choices[0].delta.content or "" async for c in stream if c.choices]
                assert "".join(chunks) == "The answer is four."

            async def respond() -> None:
                answer = await client.responses.create(
                    model="fake-model", input="What is two and two?", store=False
                )
                assert answer.output_text == "The answer is four."

            async def tool_round() -> None:
                upstream.script(
                    Reply.tool_calls([("t_add", {"a": 2, "b": 2})]), Reply.text("It is 4.")
                )
                answer = await client.chat.completions.create(model="fake-model", messages=messages)
                assert answer.choices[0].message.content == "It is 4."

            requests: list[Callable[[], Awaitable[None]]] = [ask, ask_streamed, respond]
            requests.append(tool_round)
            for request in requests:
                await request()
            gc.set_debug(0)  # what start-up left in cycles freed, not kept
            gc.garbage.clear()
            gc.collect()
            gc.set_debug(gc.DEBUG_SAVEALL)
            for _ in range(3):
                for request in requests:
                    await request()
            gc.collect()
            return _cyclic_garbage(gc.garbage)


def test_requests_leave_no_reference_cycle(saving_garbage: list[object]) -> None:
    assert uvloop.run(_requests_garbage()) == []
