"""The operators' list of open approvals, in memory and in a real Redis: the same contract
(oldest first, bounded, discardable), and in Redis keys that expire on their own."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

import proxy.state.memory
import proxy.state.redis_approvals
from proxy.state.base import OpenApproval, OpenApprovalStore
from proxy.state.memory import MemoryOpenApprovalStore
from proxy.state.redis import RedisState, connect
from proxy.state.redis_approvals import RedisOpenApprovalStore
from tests.proxy.state.conftest import RedisServer


@pytest.fixture(params=["memory", "redis"])
async def listed(
    request: pytest.FixtureRequest, redis_server: RedisServer, prefix: str
) -> AsyncIterator[OpenApprovalStore]:
    if request.param == "memory":
        yield MemoryOpenApprovalStore()
        return
    client = await connect(redis_server.url)
    state = RedisState(client, prefix=prefix, max_entry_bytes=4096)
    store = RedisOpenApprovalStore(state)
    await state.load_scripts()
    try:
        yield store
    finally:
        await state.aclose()


def entry(call_id: str, *, age_s: float = 0.0, ttl_s: float = 600.0) -> OpenApproval:
    requested = time.time() - age_s
    arguments = {"city": "Oslo", "nested": [1, {"ok": True}]}
    return OpenApproval(call_id, "t.get_weather", arguments, "asks", requested, requested + ttl_s)


async def test_entries_are_listed_oldest_first_until_discarded(listed: OpenApprovalStore) -> None:
    older, newer = entry("call_old", age_s=5), entry("call_new")
    await listed.put(older)
    await listed.put(newer)
    assert await listed.all() == [older, newer]
    assert await listed.get("call_new") == newer
    assert await listed.get("call_unknown") is None
    await listed.discard(["call_old", "call_unknown"])
    assert await listed.all() == [newer]
    await listed.discard([])


async def test_the_oldest_go_past_the_cap(
    listed: OpenApprovalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(proxy.state.memory, "MAX_OPEN", 3)
    monkeypatch.setattr(proxy.state.redis_approvals, "MAX_OPEN", 3)
    for index in range(5):
        await listed.put(entry(f"call_{index}", age_s=10 - index))
    assert [e.call_id for e in await listed.all()] == ["call_2", "call_3", "call_4"]


async def test_redis_drops_expired_entries_and_its_keys_expire(
    redis_server: RedisServer, prefix: str
) -> None:
    client = await connect(redis_server.url)
    state = RedisState(client, prefix=prefix, max_entry_bytes=4096)
    listed = RedisOpenApprovalStore(state)
    keys = [state.key("approvals-open", k) for k in ("entries", "expiries")]
    try:
        await listed.put(entry("call_expired", age_s=700))
        assert await listed.all() == []  # expired before it was listed: nothing kept
        assert await client.exists(*keys) == 0
        await listed.put(entry("call_expired", age_s=700))
        await listed.put(entry("call_open", ttl_s=60))
        assert [e.call_id for e in await listed.all()] == ["call_open"]
        # Both keys live an hour past the last expiry, then go by themselves.
        for key in (
            state.key("approvals-open", "entries"),
            state.key("approvals-open", "expiries"),
        ):
            assert 3_600_000 < await client.pttl(key) <= 3_660_000
        assert await client.zcard(state.key("approvals-open", "expiries")) == 1
    finally:
        await state.aclose()


async def test_an_entry_over_the_byte_cap_is_not_listed(
    redis_server: RedisServer, prefix: str
) -> None:
    client = await connect(redis_server.url)
    state = RedisState(client, prefix=prefix, max_entry_bytes=200)
    listed = RedisOpenApprovalStore(state)
    try:
        big = OpenApproval(
            "call_big", "t.x", {"text": "x" * 500}, "", time.time(), time.time() + 60
        )
        await listed.put(big)
        assert await listed.all() == []
    finally:
        await state.aclose()
