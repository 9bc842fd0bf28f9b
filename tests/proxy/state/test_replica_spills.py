"""A long result spilled on replica A is kept in the real redis-server: a conversation
continued on replica B (a Responses follow-up after `previous_response_id`) is offered
`read_result` and reads it back byte for byte; another key reads nothing on either replica;
the result lives `results.ttl_s` and is gone once Redis lets it expire."""

from __future__ import annotations

import re
from typing import Any

from redis import asyncio as aioredis

from proxy.turn.spill import MARK
from registry import ToolRegistry
from testing.upstream import FakeUpstream, Reply
from tests.conftest import ProxyFactory
from tests.e2e.responses_client import respond
from tests.proxy.state.conftest import RedisServer

KEYS = {"a": "key-a-000001", "b": "key-b-000001"}
AUTH = {"keys": [{"name": name, "key": key} for name, key in KEYS.items()]}
TEXT = "".join(f"entry {i}: ¶ {i * 31}\n" for i in range(6000))
DATA = TEXT.encode()


def entries() -> str:
    """A long list."""
    return TEXT


def model(body: dict[str, Any]) -> Reply:
    """`list` calls the tool; `read HANDLE OFFSET` reads 500 bytes of HANDLE; after a result,
    it answers `told:` and the result."""
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        return Reply.text(f"told: {messages[-1]['content']}")
    words = str(messages[-1]["content"]).split()
    if words[0] == "list":
        return Reply.tool_calls([("t_entries", {})])
    arguments = {"handle": words[1], "offset": int(words[2]), "length": 500}
    return Reply.tool_calls([("read_result", arguments)])


def registry() -> ToolRegistry:
    tools = ToolRegistry()
    tools.register(entries, namespace="t")
    return tools


def read(handle: str, offset: int) -> str:
    return f"read {handle} {offset}"


def text_of(response: Any) -> str:
    return str(response.output_text)


async def test_a_result_spilled_on_one_replica_is_read_on_the_other(
    make_proxy: ProxyFactory, upstream: FakeUpstream, redis_server: RedisServer, prefix: str
) -> None:
    upstream.default = Reply.func(model)
    state = {"backend": "redis", "url": redis_server.url, "prefix": prefix}
    sections = {"state": state, "auth": AUTH, "results": {"ttl_s": 120}}
    async with (
        make_proxy(registry(), **sections) as a,
        make_proxy(registry(), **sections) as b,
    ):
        a_on_a = a.client.with_options(api_key=KEYS["a"])
        a_on_b = b.client.with_options(api_key=KEYS["a"])
        b_on_b = b.client.with_options(api_key=KEYS["b"])
        first = await respond(a_on_a, stream=False, model="m", input="list")
        assert text_of(first).startswith(f"told: {MARK}{len(DATA)} bytes")
        found = re.search(r'handle "(res_[0-9a-f]+)"', text_of(first))
        assert found is not None
        handle = found[1]
        follow = await respond(
            a_on_b,
            stream=True,
            model="m",
            previous_response_id=first.id,
            input=f"read {handle} 70001",
        )
        header, body = text_of(follow).removeprefix("told: ").split("\n", 1)
        span = re.match(rf"\[{handle}: bytes (\d+)-(\d+) of {len(DATA)};", header)
        assert span is not None and int(span[1]) in (70001, 70002)
        assert DATA[int(span[1]) : int(span[2])] == body.encode()
        # Key b, on either replica, with a spilled result of its own in its conversation.
        own = await respond(b_on_b, stream=False, model="m", input="list")
        for client in (b_on_b, a.client.with_options(api_key=KEYS["b"])):
            stolen = await respond(
                client,
                stream=False,
                model="m",
                previous_response_id=own.id,
                input=f"read {handle} 0",
            )
            assert text_of(stolen) == (
                f"told: Error (tool_error): no kept result has the handle {handle!r} "
                "(unknown, or expired)"
            )
        # Kept for results.ttl_s in Redis; once Redis lets it expire, nobody reads it.
        redis = aioredis.Redis.from_url(redis_server.url)
        try:
            keys = await redis.keys(f"{prefix}spill:*:{handle}")
            assert len(keys) == 1 and 110_000 < await redis.pttl(keys[0]) <= 120_000
            await redis.pexpireat(keys[0], 1)
        finally:
            await redis.aclose()
        gone = await respond(
            a_on_a, stream=False, model="m", previous_response_id=first.id, input=read(handle, 0)
        )
        assert text_of(gone).startswith("told: Error (tool_error): no kept result has the handle")
