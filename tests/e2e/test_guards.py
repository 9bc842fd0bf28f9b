"""Loop guards: at a limit, one last call without tools gives an answer, not an error."""

from __future__ import annotations

import asyncio

import pytest

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask, tool_messages
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

USER = [{"role": "user", "content": "keep adding"}]


def _keep_calling(counter: list[int]):
    def reply(body: dict) -> Reply:
        if not body.get("tools"):
            return Reply.text("Here is what I found so far.")
        counter.append(1)
        return Reply.tool_calls([("t_add", {"a": len(counter), "b": 1})])

    return Reply.func(reply)


async def test_max_iterations(make_proxy, upstream: FakeUpstream, stream: bool) -> None:
    calls: list[int] = []
    upstream.default = _keep_calling(calls)
    async with make_proxy(registry_with(), loop={"max_iterations": 3}) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "Here is what I found so far."
    assert out.finish_reason == "stop"
    assert out.toolwire == {"stopped_by": "max_iterations"}
    assert len(upstream.requests) == 4
    assert "tools" not in upstream.requests[-1]
    assert len(tool_messages(upstream.requests[-1])) == 3


async def test_request_may_lower_max_iterations(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.default = _keep_calling([])
    async with make_proxy(registry_with(), loop={"max_iterations": 5}) as proxy:
        out = await ask(
            proxy.client,
            stream=stream,
            messages=USER,
            extra_body={"toolwire": {"max_iterations": 1}},
        )
    assert out.toolwire == {"stopped_by": "max_iterations"}
    assert len(upstream.requests) == 2


async def test_max_tool_calls_answers_every_call(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls([("t_add", {"a": i, "b": 0}) for i in range(5)]),
        Reply.text("partial"),
    )
    async with make_proxy(registry_with(), loop={"max_tool_calls": 3}) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "partial"
    assert out.toolwire == {"stopped_by": "max_tool_calls"}
    contents = [m["content"] for m in tool_messages(upstream.requests[1])]
    assert contents[:3] == ["0", "1", "2"]
    assert all(c.startswith("Error (limit)") for c in contents[3:]) and len(contents) == 5


async def test_identical_calls_stop_the_loop(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    def same(body: dict) -> Reply:
        if not body.get("tools"):
            return Reply.text("giving up")
        return Reply.tool_calls([("t_get_weather", {"city": "Paris"})])

    upstream.default = Reply.func(same)
    async with make_proxy(registry_with(), loop={"max_identical_calls": 2}) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "giving up"
    assert out.toolwire == {"stopped_by": "max_identical_calls"}
    assert len(upstream.requests) == 3


@pytest.mark.timeout(30)  # a missing timeout fails here, not at the suite's limit
async def test_turn_timeout_stops_a_slow_tool(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    def reply(body: dict) -> Reply:
        if not body.get("tools"):
            return Reply.text("out of time")
        return Reply.tool_calls([("t_slow", {"task": "forever"})])

    upstream.default = Reply.func(reply)
    # Long enough for a loaded machine's first round to reach the tool, which runs an hour.
    async with make_proxy(registry_with(), loop={"timeout_s": 2}) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "out of time"
    assert out.toolwire == {"stopped_by": "timeout"}
    (result,) = tool_messages(upstream.requests[-1])
    assert result["content"].startswith("Error (timeout)")


async def test_forced_tool_choice_is_relaxed_after_first_round(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(Reply.tool_calls([("t_add", {"a": 1, "b": 1})]), Reply.text("2"))
    async with make_proxy(registry_with()) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER, tool_choice="required")
    assert out.content == "2"
    assert upstream.requests[0]["tool_choice"] == "required"
    assert upstream.requests[1]["tool_choice"] == "auto"


async def test_turn_timeout_bounds_upstream_calls_too(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    import openai

    upstream.script(Reply.tool_calls([("t_add", {"a": 1, "b": 1})]), Reply.hang())
    async with make_proxy(registry_with(), loop={"timeout_s": 0.5}) as proxy:
        with pytest.raises(openai.APIError) as caught:
            async with asyncio.timeout(10):
                await ask(proxy.client, stream=stream, messages=USER)
    assert "did not answer in time" in str(caught.value) or "stalled" in str(caught.value)
