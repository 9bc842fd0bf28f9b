"""Each Redis store against a real redis-server: values, TTLs, byte caps, atomic takes,
the sliding window, and the 503 a lost Redis turns into."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import orjson
import pytest
import redis.exceptions

from policies import MemoryRateLimiter, pending
from proxy.errors import StateUnavailableError
from proxy.state.base import StoredResponse
from proxy.state.memory import MemoryTurnStore
from proxy.state.redis import (
    RedisModeStore,
    RedisRateLimiter,
    RedisResponseStore,
    RedisState,
    RedisTurnStore,
    connect,
)
from proxy.state.redis_approvals import RedisApprovalStore
from tests.proxy.state.conftest import RedisServer


@pytest.fixture
async def state(redis_server: RedisServer, prefix: str) -> AsyncIterator[RedisState]:
    client = await connect(redis_server.url)
    shared = RedisState(client, prefix=prefix, max_entry_bytes=4096)
    try:
        yield shared
    finally:
        await shared.aclose()


async def _eventually(read: Callable[[], Awaitable[object]], expected: object) -> bool:
    """Whether `read()` gives `expected` within 20 s (Redis expires keys on its own clock)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if await read() == expected:
            return True
        await asyncio.sleep(0.01)
    return False


async def _ttl_ms(state: RedisState, key: str) -> int:
    return int(await state.client.pttl(key))


async def test_turns_round_trip_with_ttl_and_batch(state: RedisState) -> None:
    turns = RedisTurnStore(state, kind="turn", ttl_s=60)
    messages = [{"role": "assistant", "content": "héllo", "tool_calls": []}]
    await turns.put("call_1", messages)
    assert await turns.get("call_1") == messages
    assert await turns.get("call_unknown") is None
    assert await turns.get_many(["call_1", "nope", "call_1"]) == [messages, None, messages]
    assert await turns.get_many([]) == []
    assert 59_000 < await _ttl_ms(state, state.key("turn", "call_1")) <= 60_000


async def test_add_keeps_only_the_first_and_returns_it_to_the_others(state: RedisState) -> None:
    turns = RedisTurnStore(state, kind="turn", ttl_s=60)
    first, second = [{"role": "tool", "content": "ran"}], [{"role": "tool", "content": "no"}]
    assert await turns.add("call_1", first) is None
    assert await turns.add("call_1", second) == first
    assert await turns.get("call_1") == first
    assert 59_000 < await _ttl_ms(state, state.key("turn", "call_1")) <= 60_000
    memory = MemoryTurnStore()
    assert await memory.add("call_1", first) is None
    assert await memory.add("call_1", second) == first


async def test_turns_expire(state: RedisState) -> None:
    turns = RedisTurnStore(state, ttl_s=0.05)
    await turns.put("call_1", [{"role": "user", "content": "x"}])
    assert await _eventually(lambda: turns.get("call_1"), None)


async def test_an_entry_over_the_cap_is_refused_with_a_warning(
    state: RedisState, caplog: pytest.LogCaptureFixture
) -> None:
    turns = RedisTurnStore(state)
    with caplog.at_level(logging.WARNING, "toolwire.state"):
        await turns.put("big", [{"role": "user", "content": "x" * 5000}])
    assert await turns.get("big") is None
    assert "over state.max_entry_bytes" in caplog.text
    responses = RedisResponseStore(state, ttl_s=60)
    await responses.put("resp_big", StoredResponse({"id": "resp_big"}, [{"x": "y" * 5000}]))
    assert await responses.get("resp_big") is None


async def test_approvals_expire_an_hour_after_their_expiry(state: RedisState) -> None:
    approvals = RedisApprovalStore(state)
    approval = pending("call_twabc", "t.get_weather", {"city": "Oslo"}, 60, "conv")
    await approvals.put(approval)
    assert await approvals.get("call_twabc") == approval
    ttl = await _ttl_ms(state, state.key("approval", "call_twabc"))
    assert 3_655_000 < ttl <= 3_661_000
    assert await approvals.take("call_twabc") == approval
    assert await approvals.take("call_twabc") is None
    assert await approvals.get("call_twabc") is None


async def test_twenty_concurrent_takes_one_wins(redis_server: RedisServer, prefix: str) -> None:
    # Twenty replicas, each with its own connection pool, race for one approval.
    states = [
        RedisState(await connect(redis_server.url), prefix=prefix, max_entry_bytes=4096)
        for _ in range(20)
    ]
    try:
        await RedisApprovalStore(states[0]).put(pending("call_tw1", "t.x", {}, 60))
        taken = await asyncio.gather(*(RedisApprovalStore(s).take("call_tw1") for s in states))
    finally:
        for shared in states:
            await shared.aclose()
    assert sum(t is not None for t in taken) == 1


async def test_responses_round_trip_and_delete(state: RedisState) -> None:
    responses = RedisResponseStore(state, ttl_s=120)
    stored = StoredResponse({"id": "resp_1", "output": []}, [{"role": "user", "content": "hi"}])
    await responses.put("resp_1", stored)
    assert await responses.get("resp_1") == stored
    assert 119_000 < await _ttl_ms(state, state.key("response", "resp_1")) <= 120_000
    assert await responses.delete("resp_1") is True
    assert await responses.delete("resp_1") is False
    assert await responses.get("resp_1") is None


async def test_a_response_put_with_its_json_is_kept_as_without(state: RedisState) -> None:
    responses = RedisResponseStore(state, ttl_s=120)
    stored = StoredResponse({"id": "resp_2", "output": [{"text": "é"}]}, [{"role": "user"}], "a")
    await responses.put("resp_2", stored, orjson.dumps(stored.response))
    spliced = await state.client.get(state.key("response", "resp_2"))
    await responses.put("resp_2", stored)
    assert spliced == await state.client.get(state.key("response", "resp_2"))
    assert await responses.get("resp_2") == stored


async def test_rate_limiter_matches_the_memory_one(state: RedisState) -> None:
    redis_limiter = RedisRateLimiter(state)
    now = [1000.0]
    memory = MemoryRateLimiter(clock=lambda: now[0])
    for limiter in (redis_limiter, memory):
        first = [await limiter.acquire("k", 3, 1.0) for _ in range(3)]
        refused = await limiter.acquire("k", 3, 1.0)
        assert first == [None, None, None]
        assert refused is not None and 0 < refused <= 1.0
        assert await limiter.acquire("other", 3, 1.0) is None  # keys are separate
    with pytest.raises(ValueError):
        await redis_limiter.acquire("k", 0, 1.0)
    with pytest.raises(ValueError):
        await redis_limiter.acquire("k", 1, 0)


async def test_rate_window_slides(state: RedisState) -> None:
    limiter = RedisRateLimiter(state)
    # A window of 2 s: the calls that must fall inside it do so on a loaded machine too.
    assert await limiter.acquire("k", 1, 2.0) is None
    wait = await limiter.acquire("k", 1, 2.0)
    assert wait is not None and 0 < wait <= 2.0
    assert await _eventually(lambda: limiter.acquire("k", 1, 2.0), None)
    assert 0 < await _ttl_ms(state, state.key("rate", "k")) <= 2000


async def test_rate_limit_holds_under_concurrency(state: RedisState) -> None:
    limiter = RedisRateLimiter(state)
    results = await asyncio.gather(*(limiter.acquire("k", 10, 60) for _ in range(50)))
    assert sum(r is None for r in results) == 10


async def test_mode_store_is_shared_per_upstream(state: RedisState) -> None:
    a, b = RedisModeStore(state, "local"), RedisModeStore(state, "local")
    other = RedisModeStore(state, "elsewhere")
    assert await a.is_emulated("m") is False
    await b.mark_emulated("m")
    assert await RedisModeStore(state, "local").is_emulated("m") is True
    assert await other.is_emulated("m") is False
    assert await _ttl_ms(state, state.key("mode", "local:m")) > 0


async def test_lost_redis_is_a_503_and_reconnects(own_redis: RedisServer, prefix: str) -> None:
    shared = RedisState(await connect(own_redis.url), prefix=prefix, max_entry_bytes=4096)
    turns, approvals = RedisTurnStore(shared), RedisApprovalStore(shared)
    modes = RedisModeStore(shared, "local")
    try:
        await turns.put("call_1", [{"role": "user", "content": "x"}])
        own_redis.stop()
        with pytest.raises(StateUnavailableError) as lost:
            await turns.get("call_1")
        # Fast: refused at once, not waited for until the client's timeout.
        assert isinstance(lost.value.__cause__, redis.exceptions.ConnectionError)
        assert lost.value.status == 503 and "Redis" in lost.value.message
        with pytest.raises(StateUnavailableError):
            await approvals.take("call_1")  # fails closed: nothing to run
        assert await modes.is_emulated("m") is False  # a hint: native is tried
        own_redis.start()  # empty again: nothing was persisted
        assert await turns.get("call_1") is None
        await turns.put("call_2", [{"role": "user", "content": "y"}])
        assert await turns.get("call_2") == [{"role": "user", "content": "y"}]
    finally:
        await shared.aclose()


async def test_connect_to_nothing_is_state_unavailable() -> None:
    with pytest.raises(StateUnavailableError, match="connecting to redis://"):
        await connect("redis://127.0.0.1:1/0")
