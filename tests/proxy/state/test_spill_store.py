"""The store of spilled tool results, in memory and in a real Redis: ranges read back, the
owner's alone (another key's read is the same None as an unknown handle), expiry, caps."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis import asyncio as aioredis

from proxy.state.redis import RedisState, connect
from proxy.state.spills import MemorySpillStore, RedisSpillStore, SpillStore
from tests.proxy.state.conftest import RedisServer

DATA = bytes(range(256)) * 40  # 10,240 bytes


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def redis_state(redis_server: RedisServer, prefix: str) -> AsyncIterator[RedisState]:
    client = await connect(redis_server.url)
    state = RedisState(client, prefix=prefix, max_entry_bytes=64 * 1024)
    try:
        yield state
    finally:
        await state.aclose()


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest, prefix: str) -> AsyncIterator[SpillStore]:
    if request.param == "memory":
        yield MemorySpillStore(ttl_s=60, max_bytes=1024 * 1024)
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    state = RedisState(await connect(server.url), prefix=prefix, max_entry_bytes=64 * 1024)
    try:
        yield RedisSpillStore(state, ttl_s=60)
    finally:
        await state.aclose()


async def test_ranges_are_read_back_by_their_owner(store: SpillStore) -> None:
    assert await store.put("a", "res_1", DATA)
    part = await store.read("a", "res_1", 100, 300)
    assert part is not None
    assert (part.total, part.start, part.data) == (len(DATA), 100, DATA[100:300])
    tail = await store.read("a", "res_1", len(DATA) - 10, len(DATA) + 500)
    assert tail is not None and tail.data == DATA[-10:]
    past = await store.read("a", "res_1", len(DATA) + 5, len(DATA) + 50)
    assert past is not None and (past.start, past.data) == (len(DATA), b"")
    empty = await store.read("a", "res_1", 50, 50)
    assert empty is not None and (empty.total, empty.data) == (len(DATA), b"")
    assert await store.whole("a", "res_1") == DATA


async def test_another_key_finds_nothing_as_for_an_unknown_handle(store: SpillStore) -> None:
    assert await store.put("a", "res_1", DATA)
    assert await store.read("b", "res_1", 0, 100) is None
    assert await store.whole("b", "res_1") is None
    assert await store.read("", "res_1", 0, 100) is None  # nor does no key at all
    assert await store.read("a", "res_2", 0, 100) is None
    assert await store.whole("a", "res_1") == DATA  # the owner's is untouched


async def test_two_keys_may_hold_the_same_handle_apart(store: SpillStore) -> None:
    await store.put("a", "res_1", b"A" * 2000)
    await store.put("b", "res_1", b"B" * 3000)
    assert await store.whole("a", "res_1") == b"A" * 2000
    assert await store.whole("b", "res_1") == b"B" * 3000


async def test_memory_results_expire_and_the_least_recently_read_go_first() -> None:
    clock = Clock()
    store = MemorySpillStore(ttl_s=10, max_bytes=3000, clock=clock)
    assert await store.put("a", "one", b"1" * 1000)
    assert await store.put("a", "two", b"2" * 1000)
    assert await store.read("a", "one", 0, 1) is not None  # read: now the most recent
    assert await store.put("a", "three", b"3" * 1500)  # over 3000: "two" goes
    assert await store.whole("a", "two") is None
    assert await store.whole("a", "one") == b"1" * 1000
    assert store.size == 2500
    clock.now += 10
    assert await store.whole("a", "one") is None
    assert await store.put("a", "four", b"4" * 100)  # expired ones are dropped on a put
    assert store.size == 100


async def test_memory_store_refuses_a_result_larger_than_itself() -> None:
    store = MemorySpillStore(ttl_s=10, max_bytes=1000)
    assert await store.put("a", "small", b"s" * 10)
    assert not await store.put("a", "big", b"b" * 1001)
    assert await store.whole("a", "small") == b"s" * 10


async def test_redis_results_expire_and_are_capped(
    redis_state: RedisState, redis_server: RedisServer
) -> None:
    store = RedisSpillStore(redis_state, ttl_s=60)
    assert not await store.put("a", "big", b"b" * (64 * 1024 + 1))  # state.max_entry_bytes
    assert await store.whole("a", "big") is None
    assert await store.put("alice", "short", b"s" * 2000)
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        (key,) = [
            k for k in await client.keys(f"{redis_state.prefix}spill:*") if isinstance(k, bytes)
        ]
        ttl_ms = await client.pttl(key)
        assert 0 < ttl_ms <= 60_000
        assert key.endswith(b":short") and b"alice" not in key  # the owner's name is not in it
        await client.pexpireat(key, 1)  # its time is up: Redis drops it at once
    finally:
        await client.aclose()
    assert await store.read("alice", "short", 0, 10) is None
