"""A program paused on replica A (an inner call awaiting approval) resumes on replica B
from its snapshot kept in the real redis-server, its approved call runs once across both,
and a replayed history on A runs nothing again."""

from __future__ import annotations

import json

import pytest

from testing.upstream import FakeUpstream, Reply
from tests.conftest import ProxyFactory
from tests.e2e.answers import ask, tool_messages
from tests.proxy.state.conftest import RedisServer
from tests.proxy.state.test_replicas import ASK_NETWORK, USER, continued, replicas

PROGRAM = "w = await t_get_weather(city='Rome')\nprint(w['conditions'], await t_add(a=2, b=3))"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_program_paused_on_one_replica_resumes_on_the_other(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    redis_server: RedisServer,
    prefix: str,
    stream: bool,
) -> None:
    runs: list[str] = []
    upstream.script(
        Reply.tool_calls([("run_code", {"code": PROGRAM})]),
        Reply.text("Rome is sunny; 5."),
        Reply.text("again"),
    )
    sections = {"policy": ASK_NETWORK, "code_mode": {"enabled": True}}
    async with replicas(make_proxy, redis_server, prefix, runs, **sections) as (a, b):
        first = await ask(a.client, stream=stream, messages=USER)
        (asked,) = first.tool_calls
        assert runs == [] and first.toolwire["approval_required"]
        history = continued(asked, json.dumps({"approve": True}))
        second = await ask(b.client, stream=stream, messages=history)
        assert second.content == "Rome is sunny; 5." and runs == ["Rome"]
        (result,) = tool_messages(upstream.requests[1])
        assert result["content"] == "sunny 5\n"
        replay = [*history, {"role": "assistant", "content": second.content}]
        third = await ask(a.client, stream=stream, messages=[*replay, *USER])
        assert third.content == "again" and runs == ["Rome"]
        (kept,) = tool_messages(upstream.requests[2])
        assert kept["content"] == "sunny 5\n"


async def test_another_key_cannot_resume_a_program_on_another_replica(
    make_proxy: ProxyFactory, upstream: FakeUpstream, redis_server: RedisServer, prefix: str
) -> None:
    runs: list[str] = []
    auth = {"keys": [{"name": "a", "key": "key-a-000001"}, {"name": "b", "key": "key-b-000001"}]}
    upstream.script(Reply.tool_calls([("run_code", {"code": PROGRAM})]))
    sections = {"policy": ASK_NETWORK, "code_mode": {"enabled": True}, "auth": auth}
    async with replicas(make_proxy, redis_server, prefix, runs, **sections) as (a, b):
        first = await ask(
            a.client.with_options(api_key="key-a-000001"), stream=False, messages=USER
        )
        (asked,) = first.tool_calls
        history = continued(asked, json.dumps({"approve": True}))
        upstream.script(Reply.text("b's answer"), Reply.text("a's answer"))
        stolen = await ask(
            b.client.with_options(api_key="key-b-000001"), stream=False, messages=history
        )
        assert stolen.content == "b's answer" and runs == []
        mine = await ask(
            b.client.with_options(api_key="key-a-000001"), stream=False, messages=history
        )
        assert mine.content == "a's answer" and runs == ["Rome"]
    (result,) = tool_messages(upstream.requests[-1])
    assert result["content"] == "sunny 5\n"
