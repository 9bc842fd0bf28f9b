"""Two Toolwire apps (replicas A and B) on one real redis-server: any replica continues
what another began, an approval is used once across both, rate limits hold across both,
and a lost Redis fails closed with a 503 while plain requests go on."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import openai
import pytest
from redis import asyncio as aioredis

from registry import ToolRegistry
from testing.upstream import FakeUpstream, Reply
from tests.conftest import Proxy, ProxyFactory
from tests.e2e import tools
from tests.e2e.answers import ask, tool_messages
from tests.e2e.responses_client import items, respond
from tests.e2e.tools import LOOKUP, registry_with
from tests.proxy.state.conftest import RedisServer

USER = [{"role": "user", "content": "Where is order 7, and the weather in Rome?"}]
ASK_NETWORK = {"rules": [{"match": {"tags": ["network"]}, "action": "ask"}]}
KEY = "test-key"  # what serve_proxy's client sends


def counting_registry(runs: list[str]) -> ToolRegistry:
    """The test tools, with `t.get_weather` recording each run in `runs` (shared by replicas)."""
    registry = registry_with()
    registry.unregister("t.get_weather")

    def get_weather(city: str) -> dict[str, object]:
        """Current weather of a city.

        Args:
            city: the city's name.
        """
        runs.append(city)
        return tools.get_weather(city)

    registry.register(get_weather, namespace="t", tags=["read_only", "network"])
    return registry


@contextlib.asynccontextmanager
async def replicas(
    make_proxy: ProxyFactory, redis: RedisServer, prefix: str, runs: list[str], **sections: Any
) -> AsyncIterator[tuple[Proxy, Proxy]]:
    """Replicas A and B, each its own app and port, sharing one Redis."""
    state = {"backend": "redis", "url": redis.url, "prefix": prefix}
    async with (
        make_proxy(counting_registry(runs), state=state, **sections) as a,
        make_proxy(counting_registry(runs), state=state, **sections) as b,
    ):
        yield a, b


def continued(first_call: dict[str, Any], answer: str) -> list[dict[str, Any]]:
    """The client's history after answering its one tool call."""
    call = {"id": first_call["id"], "type": "function", "function": first_call["function"]}
    return [
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": first_call["id"], "content": answer},
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_mixed_turn_begun_on_a_is_continued_on_b(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    redis_server: RedisServer,
    prefix: str,
    stream: bool,
) -> None:
    upstream.script(
        Reply.tool_calls(
            [("t_get_weather", {"city": "Rome"}), ("lookup_order", {"order_id": "7"})]
        ),
        Reply.text("Order 7 ships today; Rome is sunny."),
    )
    runs: list[str] = []
    async with replicas(make_proxy, redis_server, prefix, runs) as (a, b):
        first = await ask(a.client, stream=stream, messages=USER, tools=[LOOKUP])
        (call,) = first.tool_calls
        history = continued(call, "ships today")
        second = await ask(b.client, stream=stream, messages=history, tools=[LOOKUP])
    assert second.content == "Order 7 ships today; Rome is sunny."
    sent = upstream.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    answered = {m["tool_call_id"]: m["content"] for m in tool_messages(upstream.requests[1])}
    assert set(answered) == {c["id"] for c in sent[1]["tool_calls"]}  # every call answered
    assert answered[call["id"]] == "ships today"
    assert runs == ["Rome"]


def _approval_history(first_call: dict[str, Any], verdict: dict[str, Any]) -> list[dict[str, Any]]:
    return continued(first_call, json.dumps(verdict))


async def _pause_on(proxy: Proxy, upstream: FakeUpstream, *, then: bool = True) -> dict[str, Any]:
    """The pending call of a turn paused on `proxy`; `then`: the upstream's next answer is
    scripted too."""
    upstream.script(Reply.tool_calls([("t_get_weather", {"city": "Oslo"})]))
    if then:
        upstream.script(Reply.text("Oslo is sunny."))
    first = await ask(proxy.client, stream=False, messages=USER)
    assert first.finish_reason == "tool_calls"
    (pending,) = first.tool_calls
    assert pending["id"].startswith("call_tw")
    return pending


async def test_approval_issued_by_a_is_honoured_once_on_b(
    make_proxy: ProxyFactory, upstream: FakeUpstream, redis_server: RedisServer, prefix: str
) -> None:
    runs: list[str] = []
    async with replicas(make_proxy, redis_server, prefix, runs, policy=ASK_NETWORK) as (a, b):
        pending = await _pause_on(a, upstream)
        history = _approval_history(pending, {"approve": True})
        answer = await ask(b.client, stream=False, messages=history)
        assert answer.content == "Oslo is sunny."
        assert runs == ["Oslo"]
        result = {m["tool_call_id"]: m["content"] for m in tool_messages(upstream.requests[1])}
        assert json.loads(result[pending["id"]])["city"] == "Oslo"
        # Replayed on A (and on B again): the outcome B kept, never a second run.
        upstream.script(Reply.text("again"), Reply.text("again"))
        await ask(a.client, stream=False, messages=history)
        await ask(b.client, stream=False, messages=history)
        for request in upstream.requests[2:]:
            replayed = {m["tool_call_id"]: m["content"] for m in tool_messages(request)}
            assert replayed == result
    assert runs == ["Oslo"]


async def test_concurrent_approvals_on_both_replicas_run_once(
    make_proxy: ProxyFactory, upstream: FakeUpstream, redis_server: RedisServer, prefix: str
) -> None:
    runs: list[str] = []
    async with replicas(make_proxy, redis_server, prefix, runs, policy=ASK_NETWORK) as (a, b):
        pending = await _pause_on(a, upstream)
        history = _approval_history(pending, {"approve": True})
        upstream.script(*(Reply.text("done") for _ in range(10)))
        clients = [a.client, b.client] * 5
        await asyncio.gather(*(ask(c, stream=False, messages=history) for c in clients))
    assert runs == ["Oslo"]


async def test_refusal_on_b_is_kept_for_a(
    make_proxy: ProxyFactory, upstream: FakeUpstream, redis_server: RedisServer, prefix: str
) -> None:
    runs: list[str] = []
    async with replicas(make_proxy, redis_server, prefix, runs, policy=ASK_NETWORK) as (a, b):
        pending = await _pause_on(a, upstream)
        refused = _approval_history(pending, {"approve": False, "reason": "not today"})
        await ask(b.client, stream=False, messages=refused)
        upstream.script(Reply.text("again"))
        approved = _approval_history(pending, {"approve": True})
        await ask(a.client, stream=False, messages=approved)  # a changed verdict, too late
    for request in upstream.requests[1:]:
        (result,) = tool_messages(request)
        assert result["content"] == "Error (denied): the user refused the call: not today"
    assert runs == []


CLOCK = {
    "type": "function",
    "name": "read_clock",
    "description": "The client's own clock.",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
}


async def test_response_stored_by_a_is_continued_on_b(
    make_proxy: ProxyFactory, upstream: FakeUpstream, redis_server: RedisServer, prefix: str
) -> None:
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 1, "b": 1}), ("read_clock", {})]),
        Reply.text("1 + 1 = 2 at noon."),
    )
    runs: list[str] = []
    async with replicas(make_proxy, redis_server, prefix, runs) as (a, b):
        first = await respond(a.client, stream=False, model="fake-model", input="go", tools=[CLOCK])
        (call,) = items(first, "function_call")
        fetched = await b.client.responses.retrieve(first.id)
        assert fetched.id == first.id and fetched.output[-1].type == "function_call"
        output = {"type": "function_call_output", "call_id": call.call_id, "output": "noon"}
        second = await respond(
            b.client, stream=True, model="fake-model", previous_response_id=first.id, input=[output]
        )
        assert second.output_text == "1 + 1 = 2 at noon."
        await a.client.responses.delete(second.id)
        with pytest.raises(openai.NotFoundError):
            await b.client.responses.retrieve(second.id)
    sent = upstream.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    assert {m["content"] for m in sent[2:]} == {"2", "noon"}


async def test_a_keys_rate_limit_holds_across_replicas(
    make_proxy: ProxyFactory, upstream: FakeUpstream, redis_server: RedisServer, prefix: str
) -> None:
    auth = {"keys": [{"name": "team", "key": KEY, "rate_limit": {"requests_per_minute": 3}}]}
    upstream.script(*(Reply.text("ok") for _ in range(3)))
    runs: list[str] = []
    async with replicas(make_proxy, redis_server, prefix, runs, auth=auth) as (a, b):
        for client in (a.client, b.client, a.client):
            await ask(client, stream=False, messages=USER)
        for client in (b.client, a.client):
            with pytest.raises(openai.RateLimitError) as limited:
                await ask(client, stream=False, messages=USER)
            assert int(limited.value.response.headers["retry-after"]) >= 1
    assert len(upstream.requests) == 3


class CommandCounter:
    """Counts the commands clients sent a Redis since the last look, each one round trip (a
    script's own commands, which MONITOR shows as Lua's, are left out), through MONITOR:
    a mark echoed after a step is seen after every command of that step. Two kinds of
    command that come whatever a request does are left out as well: the replicas' pins
    followers read the pins' revision once a second, and a connection a pool opens says
    HELLO first (a pool opens one when its own are busy, as with a follower's read); on a
    loaded machine, where a step takes over a second, a step's count had either. The
    HELLOs are counted apart, in `handshakes`."""

    def __init__(self, url: str, prefix: str) -> None:
        self._client = aioredis.Redis.from_url(url)
        self._monitor = self._client.monitor()
        self._marks = 0
        self._follower = f"GET {prefix}pins:revision"
        self.handshakes = 0

    async def __aenter__(self) -> CommandCounter:
        await self._monitor.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._monitor.__aexit__()
        await self._client.aclose()

    async def since(self) -> int:
        self._marks += 1
        mark = f"count-mark-{self._marks}"
        await self._client.echo(mark)
        ran = 0
        while mark not in (command := await self._monitor.next_command())["command"]:
            said = command["command"]
            handshake = said.startswith("HELLO ")
            self.handshakes += handshake
            ran += command["client_type"] != "lua" and not handshake and said != self._follower
        return ran


async def test_round_trips_per_request(
    make_proxy: ProxyFactory, upstream: FakeUpstream, redis_server: RedisServer, prefix: str
) -> None:
    """What each kind of request costs in Redis commands (each one round trip)."""
    runs: list[str] = []
    costs = {}
    async with (
        replicas(make_proxy, redis_server, prefix, runs, policy=ASK_NETWORK) as (a, b),
        CommandCounter(redis_server.url, prefix) as counter,
    ):
        upstream.script(Reply.text("hi"))
        await counter.since()
        handshakes = counter.handshakes
        await ask(a.client, stream=False, messages=USER, tools=[LOOKUP])
        costs["plain chat"] = await counter.since()
        upstream.script(Reply.tool_calls([("lookup_order", {"order_id": "7"})]))
        first = await ask(a.client, stream=False, messages=USER, tools=[LOOKUP])
        costs["mixed turn begun"] = await counter.since()
        upstream.script(Reply.text("done"))
        await ask(b.client, stream=False, messages=continued(first.tool_calls[0], "x"))
        costs["mixed turn continued"] = await counter.since()
        pending = await _pause_on(a, upstream)
        costs["approval asked"] = await counter.since()
        await ask(b.client, stream=False, messages=_approval_history(pending, {"approve": True}))
        costs["approval honoured"] = await counter.since()
    # plain: nothing; begun: SET of the hidden turn; continued: one MGET; asked: SET turn,
    # SET approval, the operators' queue (one script); honoured: MGET turns, MGET outcomes,
    # GET + GETDEL approval, SET outcome (marked before the run), SET outcome (the result).
    assert costs == {
        "plain chat": 0,
        "mixed turn begun": 1,
        "mixed turn continued": 1,
        "approval asked": 3,
        "approval honoured": 6,
    }
    # No request opens a connection: at most one more per replica, made beside its follower.
    assert counter.handshakes - handshakes <= 2


async def test_redis_lost_and_back(
    make_proxy: ProxyFactory, upstream: FakeUpstream, own_redis: RedisServer, prefix: str
) -> None:
    runs: list[str] = []
    async with replicas(make_proxy, own_redis, prefix, runs, policy=ASK_NETWORK) as (a, b):
        pending = await _pause_on(a, upstream, then=False)
        approved = _approval_history(pending, {"approve": True})
        saver = aioredis.Redis.from_url(own_redis.url)
        await saver.save()  # this Redis keeps what it held across the restart
        await saver.aclose()
        own_redis.stop()
        for proxy in (b, a):
            with pytest.raises(openai.InternalServerError) as lost:
                await ask(proxy.client, stream=False, messages=approved)
            error = lost.value.body
            assert lost.value.status_code == 503
            assert error["code"] == "state_unavailable" and "Redis" in error["message"]  # type: ignore[index]
        # Streamed: the 503 comes before the stream starts.
        with pytest.raises(openai.InternalServerError) as lost:
            await ask(b.client, stream=True, messages=approved)
        assert lost.value.status_code == 503
        assert runs == []  # fails closed: never run unapproved, nor lost to a half-done take
        upstream.script(Reply.text("still here"))
        plain = await ask(a.client, stream=False, messages=[{"role": "user", "content": "hi"}])
        assert plain.content == "still here"
        own_redis.start()  # the same replicas reconnect, no restart
        upstream.script(Reply.text("Oslo is sunny."), Reply.text("again"))
        answer = await ask(b.client, stream=False, messages=approved)
        assert answer.content == "Oslo is sunny." and runs == ["Oslo"]
        await ask(a.client, stream=False, messages=approved)
    assert runs == ["Oslo"]
    results = [tool_messages(r)[0]["content"] for r in upstream.requests[-2:]]
    assert results[0] == results[1] and json.loads(results[0])["city"] == "Oslo"


async def test_a_model_found_emulated_on_a_is_emulated_on_b(
    make_proxy: ProxyFactory, upstream: FakeUpstream, redis_server: RedisServer, prefix: str
) -> None:
    rejection = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser'
    upstream.script(Reply.error(400, rejection), Reply.text("Hello."), Reply.text("Hi."))
    runs: list[str] = []
    auto = {"tool_calling": "auto"}
    async with replicas(make_proxy, redis_server, prefix, runs, upstream=auto) as (a, b):
        await ask(a.client, stream=False, messages=USER)
        answer = await ask(b.client, stream=False, messages=USER)
    assert answer.content == "Hi."
    # A: refused natively, then emulated; B: emulated from the start.
    assert [bool(body.get("tools")) for body in upstream.requests] == [True, False, False]


async def test_lost_redis_on_the_messages_front_is_anthropics_503(
    make_proxy: ProxyFactory, upstream: FakeUpstream, own_redis: RedisServer, prefix: str
) -> None:
    history = [
        {"role": "user", "content": "order 7?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
    ]
    body = {"model": "fake-model", "max_tokens": 50, "messages": history}
    runs: list[str] = []
    async with replicas(make_proxy, own_redis, prefix, runs) as (a, _):
        own_redis.stop()
        url = a.base_url + "/messages"
        async with aiohttp.ClientSession() as session, session.post(url, json=body) as response:
            assert response.status == 503
            error = await response.json()
    assert error["type"] == "error"  # Anthropic's shape
    assert "Redis" in error["error"]["message"]
