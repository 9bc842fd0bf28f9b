"""The store of `/mcp` task records, in memory and in a real redis-server: a terminal record
never changes again (a cancel and a completion racing leave one of them), records expire
with their TTL, each key lists only its own tasks, and a result over the byte cap fails
the task rather than vanishing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from proxy.state.mcp_tasks import (
    McpTaskRecord,
    McpTaskStore,
    MemoryMcpTaskStore,
    RedisMcpTaskStore,
)
from proxy.state.redis import RedisState, connect
from tests.proxy.state.conftest import RedisServer


def record(task_id: str, owner: str = "a", ttl_s: float = 60.0, **changes: Any) -> McpTaskRecord:
    now = time.time()
    fields: dict[str, Any] = {
        "task_id": task_id,
        "owner": owner,
        "tool": "w.crunch",
        "status": "working",
        "created_at": now,
        "updated_at": now,
        "ttl_s": ttl_s,
        "lease_until": now + 15,
    }
    return McpTaskRecord(**(fields | changes))


@pytest_asyncio.fixture(params=["memory", "redis"])
async def store(
    request: pytest.FixtureRequest, redis_server: RedisServer, prefix: str
) -> AsyncIterator[McpTaskStore]:
    if request.param == "memory":
        yield MemoryMcpTaskStore()
        return
    state = RedisState(await connect(redis_server.url), prefix=prefix, max_entry_bytes=4096)
    redis_store = RedisMcpTaskStore(state)
    await state.load_scripts()
    try:
        yield redis_store
    finally:
        await state.aclose()


async def test_a_terminal_record_never_changes(store: McpTaskStore) -> None:
    first = record("t1")
    await store.create(first)
    renewed = await store.settle(first.replace(lease_until=first.lease_until + 5))
    assert renewed is not None and renewed.status == "working"
    cancelled = await store.settle(first.replace(status="cancelled"))
    completed = await store.settle(first.replace(status="completed", result={"content": []}))
    assert cancelled is not None and cancelled.status == "cancelled"
    assert completed is not None and completed.status == "cancelled"
    kept = await store.get("t1")
    assert kept is not None and kept.status == "cancelled" and kept.result is None


async def test_a_missing_record_is_not_created_by_settling(store: McpTaskStore) -> None:
    assert await store.settle(record("nowhere", status="completed")) is None
    assert await store.get("nowhere") is None


async def test_records_expire_with_their_ttl(store: McpTaskStore) -> None:
    await store.create(record("brief", ttl_s=0.2))
    await store.create(record("long"))
    assert await store.get("brief") is not None
    async with asyncio.timeout(5):  # an expiry has no event to wait on: look until it is gone
        while True:
            if await store.get("brief") is None:
                break
            await asyncio.sleep(0.05)
    assert [r.task_id for r in await store.owned("a")] == ["long"]


async def test_each_key_lists_its_own_newest_first(store: McpTaskStore) -> None:
    start = time.time()
    for i, owner in enumerate(("a", "b", "a")):
        await store.create(record(f"task{i}", owner=owner, created_at=start + i))
    assert [r.task_id for r in await store.owned("a")] == ["task2", "task0"]
    assert [r.task_id for r in await store.owned("b")] == ["task1"]
    assert await store.owned("c") == []


async def test_a_result_over_the_cap_fails_the_task(redis_server: RedisServer, prefix: str) -> None:
    state = RedisState(await connect(redis_server.url), prefix=prefix, max_entry_bytes=1024)
    store = RedisMcpTaskStore(state)
    try:
        await store.create(record("big"))
        huge = {"content": [{"type": "text", "text": "x" * 5000}]}
        kept = await store.settle(record("big", status="completed", result=huge))
    finally:
        await state.aclose()
    assert kept is not None and kept.status == "failed" and kept.result is None
    assert kept.error is not None and "max_entry_bytes" in kept.error["message"]
