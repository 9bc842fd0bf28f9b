"""Two `toolwire serve` processes (replicas A and B) on one real redis-server, driven by the
official SDK: any replica continues what the other began, an approval is used once, a key's
rate limit holds across both, a replica killed mid-stream leaves the other serving and the
shared state consistent, and a Redis stopped and restarted under both costs 503s while it
is down, never a second run nor a lost approval, and no restart of Toolwire."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import openai
import pytest
import pytest_asyncio
from redis import asyncio as aioredis

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask, tool_messages
from tests.e2e.responses_client import items, respond
from tests.e2e.tools import LOOKUP
from tests.proxy.state.conftest import RedisServer
from tests.proxy.state.processes import LIMITED_KEY, Replica, Runs, replica_processes

USER = [{"role": "user", "content": "Where is order 7, and what is 1 + 1?"}]
MIXED = Reply.tool_calls([("t_add", {"a": 1, "b": 1}), ("lookup_order", {"order_id": "7"})])


@dataclass
class Shared:
    """Replicas A and B, their upstream and their tools' runs, for the tests that neither kill
    a replica nor stop Redis: their calls, approvals, responses and keys are their own."""

    pair: tuple[Replica, Replica]
    upstream: FakeUpstream
    runs: Runs


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_pair(
    tmp_path_factory: pytest.TempPathFactory, redis_server: RedisServer
) -> AsyncIterator[Shared]:
    folder = tmp_path_factory.mktemp("replicas")
    runs = Runs(folder)
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    async with (
        FakeUpstream() as upstream,
        replica_processes(folder, upstream, redis_server.url, prefix, runs) as pair,
    ):
        yield Shared(pair, upstream, runs)


@pytest.fixture
def shared(shared_pair: Shared) -> Shared:
    """The module's replicas, with no upstream requests or scripted replies and no tool runs
    left from another test."""
    shared_pair.upstream.forget()
    shared_pair.runs.path.unlink(missing_ok=True)
    return shared_pair


@pytest.fixture
def runs(tmp_path: Path) -> Runs:
    return Runs(tmp_path)


@pytest.fixture
async def pair(
    tmp_path: Path, upstream: FakeUpstream, redis_server: RedisServer, prefix: str, runs: Runs
) -> AsyncIterator[tuple[Replica, Replica]]:
    async with replica_processes(tmp_path, upstream, redis_server.url, prefix, runs) as pair:
        yield pair


def answered(call: dict[str, Any], content: str, user: list[Any] = USER) -> list[dict[str, Any]]:
    """The client's history after answering its one tool call with `content`."""
    plain = {"id": call["id"], "type": "function", "function": call["function"]}
    return [
        *user,
        {"role": "assistant", "content": None, "tool_calls": [plain]},
        {"role": "tool", "tool_call_id": call["id"], "content": content},
    ]


def assert_complete(body: dict[str, Any]) -> dict[str, str]:
    """Every tool call of the history the upstream got is answered; the answers by call id."""
    calls = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or []]
    answers = {m["tool_call_id"]: m["content"] for m in tool_messages(body)}
    assert sorted(answers) == sorted(calls) and calls
    return answers


async def begin_mixed(replica: Replica, upstream: FakeUpstream) -> dict[str, Any]:
    """A turn on `replica` where the model calls `t.add` (run) and the client's lookup_order
    (returned); the client's call."""
    upstream.script(MIXED)
    first = await ask(replica.client, stream=False, messages=USER, tools=[LOOKUP])
    (call,) = first.tool_calls
    assert call["function"]["name"] == "lookup_order"
    return call


async def pause(replica: Replica, upstream: FakeUpstream, tool: str, city: str) -> dict[str, Any]:
    """A call of `tool` (an `ask` tool) paused on `replica`."""
    upstream.script(Reply.tool_calls([(tool, {"city": city})]))
    first = await ask(replica.client, stream=False, messages=USER)
    assert first.finish_reason == "tool_calls" and first.toolwire
    (call,) = first.tool_calls
    return call


APPROVE = json.dumps({"approve": True})


@pytest.mark.asyncio(loop_scope="module")
async def test_a_mixed_turn_begun_on_a_is_continued_on_b(shared: Shared) -> None:
    (a, b), upstream = shared.pair, shared.upstream
    call = await begin_mixed(a, upstream)
    upstream.script(Reply.text("Order 7 ships today; 1 + 1 = 2."))
    second = await ask(b.client, stream=True, messages=answered(call, "ships today"))
    assert second.content == "Order 7 ships today; 1 + 1 = 2."
    sent = upstream.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    assert sorted(assert_complete(upstream.requests[1]).values()) == ["2", "ships today"]


@pytest.mark.asyncio(loop_scope="module")
async def test_an_approval_issued_by_a_is_honoured_once_by_b(shared: Shared) -> None:
    (a, b), upstream, runs = shared.pair, shared.upstream, shared.runs
    call = await pause(a, upstream, "t_get_weather", "Oslo")
    upstream.script(Reply.text("Oslo is sunny."), Reply.text("again"), Reply.text("again"))
    answer = await ask(b.client, stream=False, messages=answered(call, APPROVE))
    assert answer.content == "Oslo is sunny."
    assert runs.lines() == ["get_weather Oslo"]
    result = assert_complete(upstream.requests[1])[call["id"]]
    assert json.loads(result) == {"city": "Oslo", "sky": "sunny"}
    # Replayed to A (and B): the approval is used up; the result B kept, no second run.
    await ask(a.client, stream=True, messages=answered(call, APPROVE))
    await ask(b.client, stream=False, messages=answered(call, APPROVE))
    assert [assert_complete(r)[call["id"]] for r in upstream.requests[2:]] == [result, result]
    assert runs.lines() == ["get_weather Oslo"]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_response_stored_by_a_is_continued_on_b(shared: Shared) -> None:
    (a, b), upstream = shared.pair, shared.upstream
    clock = {
        "type": "function",
        "name": "read_clock",
        "description": "The client's own clock.",
        "parameters": {"type": "object", "properties": {}},
    }
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 1, "b": 1}), ("read_clock", {})]),
        Reply.text("1 + 1 = 2 at noon."),
    )
    first = await respond(a.client, stream=False, model="fake-model", input="go", tools=[clock])
    (call,) = items(first, "function_call")
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "noon"}
    second = await respond(
        b.client, stream=True, model="fake-model", previous_response_id=first.id, input=[output]
    )
    assert second.output_text == "1 + 1 = 2 at noon."
    assert sorted(assert_complete(upstream.requests[1]).values()) == ["2", "noon"]
    assert (await a.client.responses.retrieve(second.id)).output_text == "1 + 1 = 2 at noon."


@pytest.mark.asyncio(loop_scope="module")
async def test_a_keys_rate_limit_holds_across_both(shared: Shared) -> None:
    (a, b), upstream = shared.pair, shared.upstream
    limited = [a.client_with(LIMITED_KEY), b.client_with(LIMITED_KEY)]
    try:
        for client in (limited[0], limited[1], limited[0]):
            await ask(client, stream=False, messages=USER)
        for client in (limited[1], limited[0]):
            with pytest.raises(openai.RateLimitError) as refused:
                await ask(client, stream=False, messages=USER)
            assert int(refused.value.response.headers["retry-after"]) >= 1
        await ask(b.client, stream=False, messages=USER)  # another key is not limited
    finally:
        for client in limited:
            await client.close()
    assert len(upstream.requests) == 4


async def test_a_killed_mid_stream_leaves_b_serving_and_the_state_consistent(
    pair: tuple[Replica, Replica],
    upstream: FakeUpstream,
    runs: Runs,
    redis_server: RedisServer,
    prefix: str,
) -> None:
    a, b = pair
    mixed = await begin_mixed(a, upstream)
    booking = await pause(a, upstream, "t_book", "Paris")
    runs.hold.touch()  # the booking runs until A is gone
    streamed = asyncio.create_task(ask(a.client, stream=True, messages=answered(booking, APPROVE)))
    try:
        await runs.wait_for("book Paris")
        upstream.script(Reply.hang())
        background = await a.client.responses.create(model="m", input="hi", background=True)
        async with asyncio.timeout(10):
            while not upstream.requests or upstream.requests[-1]["messages"][-1]["content"] != "hi":  # noqa: ASYNC110 (another process's request)
                await asyncio.sleep(0.01)
        a.kill()
        with pytest.raises((openai.APIConnectionError, httpx.TransportError)):
            await streamed
    finally:
        if not streamed.done():
            streamed.cancel()
            with contextlib.suppress(BaseException):
                await streamed
    runs.hold.unlink()
    # B: A's background response, its lease unrenewed, is failed, never in_progress for ever.
    async with asyncio.timeout(10):
        while (polled := await b.client.responses.retrieve(background.id)).status == "in_progress":  # noqa: ASYNC110 (polled, as a client does)
            await asyncio.sleep(0.05)
    assert polled.status == "failed" and "lease expired" in polled.error.message
    # In Redis: the approval A took is gone, the mark A left before running the call stays
    # (among the outcomes of the key that paused the call, `free`).
    assert await _keys(redis_server, f"{prefix}approval:{booking['id']}") == []
    assert await _keys(redis_server, f"{prefix}outcome:approved-result:*:free:{booking['id']}")
    # B: the booking A was running is not run again; the model learns it may have run.
    upstream.script(Reply.text("It may be booked."), Reply.text("Order 7 ships today."))
    await ask(b.client, stream=True, messages=answered(booking, APPROVE))
    kept = assert_complete(upstream.requests[-1])[booking["id"]]
    assert "interrupted" in kept and "may have run" in kept
    # B continues the turn A began before it died.
    after = await ask(b.client, stream=False, messages=answered(mixed, "ships today"))
    assert after.content == "Order 7 ships today."
    assert sorted(assert_complete(upstream.requests[-1]).values()) == ["2", "ships today"]
    assert runs.lines() == ["book Paris"]


async def test_redis_stopped_and_restarted_under_both(
    tmp_path: Path, upstream: FakeUpstream, own_redis: RedisServer, prefix: str, runs: Runs
) -> None:
    async with replica_processes(tmp_path, upstream, own_redis.url, prefix, runs) as (a, b):
        call = await pause(a, upstream, "t_get_weather", "Oslo")
        mixed = await begin_mixed(b, upstream)
        await _save(own_redis)  # what Redis holds survives its restart (RDB)
        own_redis.stop()
        for replica in (a, b):
            for messages in (answered(call, APPROVE), answered(mixed, "ships today")):
                for stream in (False, True):
                    with pytest.raises(openai.InternalServerError) as lost:
                        await ask(replica.client, stream=stream, messages=messages)
                    assert lost.value.status_code == 503
                    assert lost.value.code == "state_unavailable"
            # A call that would pause cannot be promised an approval: a 503 too.
            upstream.script(Reply.tool_calls([("t_get_weather", {"city": "Rome"})]))
            with pytest.raises(openai.InternalServerError):
                await ask(replica.client, stream=False, messages=USER)
            with pytest.raises(openai.InternalServerError):  # a rate-limited key
                async with replica.client_with(LIMITED_KEY) as limited:
                    await ask(limited, stream=False, messages=USER)
            upstream.script(Reply.text("still here"))
            plain = await ask(replica.client, stream=False, messages=USER)
            assert plain.content == "still here"
        assert runs.lines() == []  # never run unapproved while Redis was away
        own_redis.start()
        # The same processes reconnect; the approval is there, and used once, even raced.
        assert a.process.poll() is None and b.process.poll() is None
        upstream.script(*(Reply.text("Oslo is sunny.") for _ in range(6)))
        clients = [a.client, b.client] * 3
        await asyncio.gather(
            *(ask(c, stream=False, messages=answered(call, APPROVE)) for c in clients)
        )
        assert runs.lines() == ["get_weather Oslo"]
        upstream.script(Reply.text("Oslo is sunny."))
        await ask(b.client, stream=False, messages=answered(call, APPROVE))
        result = json.loads(assert_complete(upstream.requests[-1])[call["id"]])
        assert result == {"city": "Oslo", "sky": "sunny"}  # the one run's result, kept
        upstream.script(Reply.text("Order 7 ships today."))
        after = await ask(a.client, stream=False, messages=answered(mixed, "ships today"))
        assert after.content == "Order 7 ships today."
        assert sorted(assert_complete(upstream.requests[-1]).values()) == ["2", "ships today"]
    assert await _keys(own_redis, f"{prefix}approval:*") == []  # taken, not left behind


async def _save(redis: RedisServer) -> None:
    client = aioredis.Redis.from_url(redis.url)
    try:
        await client.save()
    finally:
        await client.aclose()


async def _keys(redis: RedisServer, pattern: str) -> list[bytes]:
    client = aioredis.Redis.from_url(redis.url)
    try:
        return [key async for key in client.scan_iter(pattern)]
    finally:
        await client.aclose()
