"""Tenants kept apart across replicas on one real redis-server: what key `a` made on one
replica (a stored response, a paused call, an operator's approval of it) is unknown to key
`b` on either replica, and still `a`'s own; records written before owners were kept load
as nobody's."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import openai
import orjson
import pytest
import pytest_asyncio
from redis import asyncio as aioredis

from policies import MemoryApprovalStore, Principal, pending, refusal
from proxy.state.base import OpenApproval, StoredResponse
from proxy.state.memory import MemoryOpenApprovalStore, MemoryResponseStore
from proxy.state.redis import RedisResponseStore, RedisState
from proxy.state.redis_approvals import RedisApprovalStore, RedisOpenApprovalStore
from testing.upstream import FakeUpstream, Reply
from tests.conftest import serve_proxy
from tests.e2e.answers import ask
from tests.e2e.responses_client import respond
from tests.e2e.tenants import (
    ASK_WEATHER,
    AUTH,
    UNKNOWN,
    Tenants,
    answered,
    model,
    recording_registry,
    tenants_of,
    user,
)
from tests.proxy.state.conftest import RedisServer

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = "fake-model"


@dataclass
class Replicas:
    one: Tenants
    two: Tenants
    redis: aioredis.Redis
    prefix: str


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def replicas(redis_server: RedisServer) -> AsyncIterator[Replicas]:
    """Replicas one and two (each its own app and port) sharing one Redis and one model."""
    runs: list[str] = []
    prefix = f"tenants-{uuid.uuid4().hex[:8]}:"
    async with FakeUpstream(Reply.func(model)) as upstream:
        config = {
            "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
            "auth": AUTH,
            "policy": ASK_WEATHER,
            "state": {"backend": "redis", "url": redis_server.url, "prefix": prefix},
        }
        async with (
            serve_proxy(config, recording_registry(runs)) as first,
            serve_proxy(config, recording_registry(runs)) as second,
            tenants_of(first, runs) as one,
            tenants_of(second, runs) as two,
            aioredis.from_url(redis_server.url) as redis,
        ):
            yield Replicas(one, two, redis, prefix)


async def test_a_response_stored_on_one_replica_is_its_keys_alone_on_both(
    replicas: Replicas,
) -> None:
    one, two = replicas.one, replicas.two
    first = await respond(one.a, stream=False, model=MODEL, input="add 2 3")
    for b in (one.b, two.b):
        with pytest.raises(openai.NotFoundError):
            await b.responses.retrieve(first.id)
        with pytest.raises(openai.NotFoundError):
            await b.responses.delete(first.id)
        with pytest.raises(openai.NotFoundError):
            await respond(b, stream=False, model=MODEL, previous_response_id=first.id, input="x")
    assert (await two.a.responses.retrieve(first.id)).output_text == "told: 5"
    assert (await two.master.responses.retrieve(first.id)).output_text == "told: 5"
    follow = await respond(
        two.a, stream=True, model=MODEL, previous_response_id=first.id, input="y"
    )
    assert follow.output_text == "echo: y"


async def test_a_verdict_under_another_key_is_unknown_on_every_replica(
    replicas: Replicas,
) -> None:
    one, two = replicas.one, replicas.two
    first = await ask(one.a, stream=False, messages=user("weather Oslo"))
    (call,) = first.tool_calls
    history = answered("weather Oslo", call, {"approve": True})
    for b in (two.b, one.b):
        assert (await ask(b, stream=False, messages=history)).content == f"told: {UNKNOWN}"
    assert "Oslo" not in one.runs
    ran = await ask(two.a, stream=True, messages=history)
    assert json.loads(ran.content.removeprefix("told: "))["city"] == "Oslo"
    # Replayed: A's kept result for A on either replica, never for B.
    assert (await ask(one.a, stream=False, messages=history)).content == ran.content
    assert (await ask(two.b, stream=False, messages=history)).content == f"told: {UNKNOWN}"
    assert one.runs.count("Oslo") == 1


async def test_an_operators_approval_on_one_replica_completes_only_the_asking_key(
    replicas: Replicas,
) -> None:
    one, two = replicas.one, replicas.two
    first = await ask(one.a, stream=False, messages=user("weather Rome"))
    (call,) = first.tool_calls
    listed = (await two.admin.get("/approvals")).json()
    assert (call["id"], "a") in [(e["call_id"], e["owner"]) for e in listed]
    assert (await one.admin.post(f"/approvals/{call['id']}/approve", json={})).status_code == 200
    waiting = answered("weather Rome", call, "waiting for the operator")
    refused = await ask(two.b, stream=False, messages=waiting)
    assert refused.content == f"told: {UNKNOWN}"
    assert "Rome" not in one.runs
    ran = await ask(two.a, stream=False, messages=waiting)
    assert json.loads(ran.content.removeprefix("told: "))["city"] == "Rome"
    assert one.runs.count("Rome") == 1


async def test_records_written_before_owners_load_as_nobodys(replicas: Replicas) -> None:
    one, two = replicas.one, replicas.two
    first = await ask(one.a, stream=False, messages=user("weather Lima"))
    (call,) = first.tool_calls
    stored = await respond(one.a, stream=False, model=MODEL, input="add 1 1")
    # Rewrite both records as a replica before this change wrote them: no owner.
    redis, prefix = replicas.redis, replicas.prefix
    approval_key, response_key = f"{prefix}approval:{call['id']}", f"{prefix}response:{stored.id}"
    approval = orjson.loads(await redis.get(approval_key))
    assert approval.pop("owner") == "a"
    await redis.set(approval_key, orjson.dumps(approval), keepttl=True)
    response = orjson.loads(await redis.get(response_key))
    await redis.set(response_key, orjson.dumps(response[:2]), keepttl=True)
    # Nobody's: the master key alone reads the response, and no key's verdict counts.
    with pytest.raises(openai.NotFoundError):
        await two.a.responses.retrieve(stored.id)
    assert (await two.master.responses.retrieve(stored.id)).output_text == "told: 2"
    history = answered("weather Lima", call, {"approve": True})
    assert (await ask(two.a, stream=False, messages=history)).content == f"told: {UNKNOWN}"
    assert "Lima" not in one.runs


async def test_memory_and_redis_keep_owners_alike(replicas: Replicas) -> None:
    state = RedisState(replicas.redis, prefix=f"{replicas.prefix}stores:", max_entry_bytes=4096)
    a, b, master = Principal("a"), Principal("b"), Principal("master", master=True)
    for responses in (
        MemoryResponseStore(ttl_s=60, max_bytes=4096),
        RedisResponseStore(state, ttl_s=60),
    ):
        await responses.put("resp_1", StoredResponse({"id": "resp_1"}, [], "a"))
        await responses.put("resp_2", StoredResponse({"id": "resp_2"}, []))
        mine, nobodys = await responses.get("resp_1"), await responses.get("resp_2")
        assert mine is not None and nobodys is not None
        assert [mine.visible_to(p) for p in (a, b, master, None)] == [True, False, True, True]
        assert [nobodys.visible_to(p) for p in (a, b, master, None)] == [False, False, True, True]
    for approvals in (MemoryApprovalStore(), RedisApprovalStore(state)):
        await approvals.put(pending("call_tw1", "t.get_weather", {"city": "Oslo"}, 60, "c", "a"))
        approval = await approvals.get("call_tw1")
        assert approval is not None and approval.owner == "a"
        args = {"city": "Oslo"}
        assert refusal(approval, "t.get_weather", args, "c", "a") is None
        assert refusal(approval, "t.get_weather", args, "c", "b") == UNKNOWN.removeprefix(
            "Error (denied): "
        )
    now = time.time()
    for listed in (MemoryOpenApprovalStore(), RedisOpenApprovalStore(state)):
        await listed.put(OpenApproval("call_tw1", "t.x", {}, "asks", now, now + 60, owner="a"))
        entry = await listed.get("call_tw1")
        assert entry is not None and entry.owner == "a"
