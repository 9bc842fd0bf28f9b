"""A model found dropping its tools on one replica is emulated on the others through Redis,
without their looking again; a lost Redis leaves each replica to look on its own."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from testing.template_servers import TemplateServer
from tests.conftest import serve_proxy
from tests.e2e.answers import ask
from tests.e2e.tools import registry_with
from tests.proxy.state.conftest import RedisServer

MODEL = "local-model"
USER = [{"role": "user", "content": "What is the weather in Oslo?"}]


def config(base_url: str, redis: RedisServer, prefix: str) -> dict[str, Any]:
    upstream = {"name": "local", "base_url": base_url, "tool_calling": "auto"}
    state = {"backend": "redis", "url": redis.url, "prefix": prefix}
    return {"upstreams": [upstream], "state": state}


def call(city: str) -> str:
    """The model's Hermes call of the weather tool."""
    called = {"name": "t_get_weather", "arguments": {"city": city}}
    return f"<tool_call>\n{json.dumps(called)}\n</tool_call>"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_model_found_dropping_tools_on_a_is_emulated_on_b_without_a_look(
    caplog: pytest.LogCaptureFixture, redis_server: RedisServer, prefix: str, stream: bool
) -> None:
    caplog.set_level(logging.INFO, logger="toolwire.emulation")
    async with TemplateServer("llama.cpp", shows_tools=False) as fake:
        fake.script(call("Oslo"), "Oslo is sunny.", call("Rome"), "Rome is sunny.")
        shared = config(fake.base_url, redis_server, prefix)
        async with (
            serve_proxy(shared, registry_with()) as a,
            serve_proxy(shared, registry_with()) as b,
        ):
            first = await ask(a.client, stream=stream, model=MODEL, messages=USER)
            looked = (fake.hits["/props"], fake.hits["/apply-template"])
            second = await ask(b.client, stream=stream, model=MODEL, messages=USER)
    assert (first.content, second.content) == ("Oslo is sunny.", "Rome is sunny.")
    assert looked == (1, 2)
    assert (fake.hits["/props"], fake.hits["/apply-template"]) == looked  # B did not look
    assert [("tools" in body) for body in fake.requests] == [False] * 4
    results = [body["messages"][-1]["content"] for body in fake.requests[1::2]]
    assert all(r.startswith("<tool_response>") and "sunny" in r for r in results)
    drops = [r for r in caplog.records if "drops tools" in r.getMessage()]
    assert len(drops) == 1


async def test_without_redis_each_replica_looks_and_still_emulates(
    own_redis: RedisServer, prefix: str
) -> None:
    async with TemplateServer("ollama", shows_tools=False) as fake:
        fake.script("Hello.")
        shared = config(fake.base_url, own_redis, prefix)
        async with (
            serve_proxy(shared, registry_with()) as a,
            serve_proxy(shared, registry_with()) as b,
        ):
            own_redis.stop()
            answers = [
                await ask(proxy.client, stream=False, model=MODEL, messages=USER)
                for proxy in (a, b, a)
            ]
    assert [answer.content for answer in answers] == ["Hello."] * 3
    assert [("tools" in body) for body in fake.requests] == [False] * 3
    assert fake.hits["/api/show"] == 2  # once per replica: A remembers in its own memory
