"""The background runs' stores, in memory and in a real Redis, held to one contract: a run
ends once, its log is read after any sequence number and waits for what comes, an expired
lease lets a reader end the run, and a run ended elsewhere takes no more events."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from proxy.state.base import ResponseStore, StoredResponse
from proxy.state.memory import MemoryResponseStore
from proxy.state.memory_runs import MemoryRunStore
from proxy.state.redis import RedisResponseStore, RedisState, connect
from proxy.state.redis_runs import RedisRunStore
from proxy.state.runs import RunEvent, RunStore, Tail
from tests.proxy.state.conftest import RedisServer

pytestmark = pytest.mark.parametrize("backend", ["memory", "redis"])


def event(sequence: int, kind: str = "response.output_text.delta") -> RunEvent:
    data = orjson.dumps({"type": kind, "sequence_number": sequence})
    return RunEvent(sequence, kind, data)


def response(status: str) -> StoredResponse:
    return StoredResponse({"id": "resp_1", "status": status, "background": True}, [], "a")


@contextlib.asynccontextmanager
async def stores(
    backend: str, redis_server: RedisServer, prefix: str
) -> AsyncIterator[tuple[RunStore, ResponseStore]]:
    if backend == "memory":
        responses = MemoryResponseStore(ttl_s=60, max_bytes=1 << 20)
        yield MemoryRunStore(responses, ttl_s=60, max_bytes=1 << 20), responses
        return
    client = await connect(redis_server.url)
    state = RedisState(client, prefix=prefix, max_entry_bytes=1 << 20)
    runs = RedisRunStore(state, ttl_s=60)
    try:
        yield runs, RedisResponseStore(state, ttl_s=60)
    finally:
        await runs.aclose()
        await state.aclose()


async def test_a_run_ends_once_and_its_log_is_read_after_any_number(
    backend: str, redis_server: RedisServer, prefix: str
) -> None:
    async with stores(backend, redis_server, prefix) as (runs, responses):
        await runs.open("resp_1", response("queued"), [event(0, "response.created")], 30)
        assert (await runs.state("resp_1")).status == "queued"  # type: ignore[union-attr]
        assert await runs.start("resp_1")
        await runs.append("resp_1", [event(1), event(2)])
        assert await runs.beat(["resp_1", "resp_unknown"], 30) == [True, False]
        done = [event(3, "response.completed")]
        assert await runs.finish("resp_1", "completed", response("completed"), done)
        assert not await runs.finish("resp_1", "cancelled", response("cancelled"))
        stored = await responses.get("resp_1")
        assert stored is not None and stored.response["status"] == "completed"
        state = await runs.state("resp_1")
        assert state is not None and state.ended and not state.orphaned
        assert await runs.beat(["resp_1"], 30) == [False]

        found, cursor, ended = await runs.read("resp_1", runs.cursor_after(None), 0.1)
        assert [e.sequence for e in found] == [0, 1, 2, 3] and ended
        found, cursor, ended = await runs.read("resp_1", runs.cursor_after(1), 0.1)
        assert [e.sequence for e in found] == [2, 3] and ended
        assert found[-1].data == done[0].data
        found, _, ended = await runs.read("resp_1", cursor, 5)
        assert found == [] and ended  # past the end: no wait
        # A run ended elsewhere takes no more events.
        await runs.append("resp_1", [event(4)])
        found, _, _ = await runs.read("resp_1", runs.cursor_after(3), 0.1)
        assert found == []


async def test_a_reader_waits_for_the_next_events(
    backend: str, redis_server: RedisServer, prefix: str
) -> None:
    async with stores(backend, redis_server, prefix) as (runs, _):
        await runs.open("resp_1", response("queued"), [event(0)], 30)
        cursor = runs.cursor_after(0)
        reading = asyncio.ensure_future(runs.read("resp_1", cursor, 1.0))
        await asyncio.sleep(0)  # the read begins, and finds nothing yet
        await runs.append("resp_1", [event(1)])
        found, cursor, ended = await reading
        assert [e.sequence for e in found] == [1] and not ended
        found, _, ended = await runs.read("resp_1", cursor, 0.05)
        assert found == [] and not ended


async def test_a_cancel_closes_the_log_and_the_run_takes_no_more(
    backend: str, redis_server: RedisServer, prefix: str
) -> None:
    async with stores(backend, redis_server, prefix) as (runs, responses):
        await runs.open("resp_1", response("queued"), [event(0)], 30)
        assert await runs.finish("resp_1", "cancelled", response("cancelled"))
        assert not await runs.start("resp_1")
        await runs.append("resp_1", [event(1)])
        found, _, ended = await runs.read("resp_1", runs.cursor_after(None), 0.1)
        assert [e.sequence for e in found] == [0] and ended
        assert not await runs.finish("resp_1", "completed", response("completed"))
        stored = await responses.get("resp_1")
        assert stored is not None and stored.response["status"] == "cancelled"


async def test_an_expired_lease_lets_a_reader_fail_the_run(
    backend: str, redis_server: RedisServer, prefix: str
) -> None:
    async with stores(backend, redis_server, prefix) as (runs, responses):
        await runs.open("resp_1", response("queued"), [event(0)], 0.05)
        await runs.append("resp_1", [event(1)])
        tail = Tail("response.failed", b'{"type":"response.failed","sequence_number":', b"}")
        failed = response("failed")
        async with asyncio.timeout(5):
            while not (state := await runs.state("resp_1")) or not state.orphaned:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        assert await runs.finish("resp_1", "failed", failed, tail=tail, orphaned_only=True)
        found, _, ended = await runs.read("resp_1", runs.cursor_after(1), 0.1)
        assert [(e.sequence, e.kind) for e in found] == [(2, "response.failed")] and ended
        assert orjson.loads(found[0].data) == {"type": "response.failed", "sequence_number": 2}
        stored = await responses.get("resp_1")
        assert stored is not None and stored.response["status"] == "failed"


async def test_a_held_lease_keeps_a_reader_from_failing_the_run(
    backend: str, redis_server: RedisServer, prefix: str
) -> None:
    async with stores(backend, redis_server, prefix) as (runs, _):
        await runs.open("resp_1", response("queued"), [event(0)], 30)
        assert not await runs.finish("resp_1", "failed", response("failed"), orphaned_only=True)
        state = await runs.state("resp_1")
        assert state is not None and state.status == "queued" and state.alive
        await runs.forget("resp_1")
        assert await runs.state("resp_1") is None
        assert await runs.read("resp_1", runs.cursor_after(None), 1) == (
            [],
            runs.cursor_after(None),
            True,
        )


async def test_events_that_end_the_log_while_a_reader_looks_are_still_read(
    backend: str, redis_server: RedisServer, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with stores(backend, redis_server, prefix) as (runs, _):
        await runs.open("resp_1", response("queued"), [event(0)], 30)
        cursor = runs.cursor_after(0)
        closing = [event(1), event(2, "response.completed")]
        if isinstance(runs, RedisRunStore):
            # The run ends just after the reader found nothing new, before it reads the tail.
            client = runs._state.client
            read = client.xread

            async def xread_then_finish(*args: Any, **kwargs: Any) -> Any:
                found = await read(*args, **kwargs)
                monkeypatch.setattr(client, "xread", read)
                await runs.finish("resp_1", "completed", response("completed"), closing)
                return found

            monkeypatch.setattr(client, "xread", xread_then_finish)
        else:
            await runs.finish("resp_1", "completed", response("completed"), closing)
        found, _, ended = await runs.read("resp_1", cursor, 0.1)
        assert [e.sequence for e in found] == [1, 2] and ended
