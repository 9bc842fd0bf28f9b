"""A program pauses on calls the client answers, through the real server with the openai
SDK, streamed and not: an inner call that needs approval goes to the client as an approval
request, a call of the client's own tool as that tool's call; the client answers as it
would any, and the program resumes where it stopped (a refusal raises in it), pauses again
if it must, and its output reaches the model as the `run_code` result. Nothing runs twice on
a replayed history, and another key's request cannot resume the program."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy.turn.pauses import LOST
from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import Outcome, ask, tool_messages
from tests.e2e.test_approvals import _counting_registry
from tests.e2e.tools import LOOKUP
from tests.e2e.tools import registry_with as tools_registry

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

USER = [{"role": "user", "content": "Weather in Oslo and Rome, and order 7"}]
ASK_NETWORK = {"rules": [{"match": {"tags": ["network"]}, "action": "ask"}]}
CODE_MODE = {"enabled": True}
PROGRAM = (
    "a = await t_add(a=1, b=2)\n"
    "w = await t_get_weather(city='Oslo')\n"
    "print('oslo', w['conditions'], a)\n"
    "try:\n"
    "    await t_get_weather(city='Rome')\n"
    "except RuntimeError as e:\n"
    "    print('rome refused:', 'refused' in str(e))\n"
    "order = await lookup_order(order_id='7')\n"
    "print('order', order['status'])\n"
)


def _answer(first: Outcome, content: Any, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    (call,) = first.tool_calls
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call["id"], "type": "function", "function": call["function"]}],
    }
    reply = {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(content)}
    return [*history, assistant, reply]


async def test_approvals_and_client_tools_pause_and_resume_a_program(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    registry, runs = _counting_registry()
    upstream.script(
        Reply.tool_calls([("run_code", {"code": PROGRAM})]), Reply.text("Oslo sunny; order sent.")
    )
    async with make_proxy(registry, policy=ASK_NETWORK, code_mode=CODE_MODE) as proxy:
        tools = [LOOKUP]
        first = await ask(proxy.client, stream=stream, messages=USER, tools=tools)
        offered = {t["function"]["name"]: t for t in upstream.requests[0]["tools"]}
        description = offered["run_code"]["function"]["description"]
        assert "async def lookup_order(*, order_id: str | None = None) -> Any:" in description
        assert "lookup_order" in offered  # and still a tool of its own
        (asked,) = first.tool_calls
        assert first.finish_reason == "tool_calls" and runs == []
        assert json.loads(asked["function"]["arguments"]) == {"city": "Oslo"}
        (required,) = first.toolwire["approval_required"]
        assert required["tool"] == "t.get_weather" and required["tool_call_id"] == asked["id"]

        history = _answer(first, {"approve": True}, USER)
        second = await ask(proxy.client, stream=stream, messages=history, tools=tools)
        assert runs == ["Oslo"]
        (asked_rome,) = second.tool_calls
        assert json.loads(asked_rome["function"]["arguments"]) == {"city": "Rome"}

        history = _answer(second, {"approve": False, "reason": "not Rome"}, history)
        third = await ask(proxy.client, stream=stream, messages=history, tools=tools)
        (lookup,) = third.tool_calls
        assert lookup["function"]["name"] == "lookup_order" and not third.toolwire
        assert json.loads(lookup["function"]["arguments"]) == {"order_id": "7"}

        history = _answer(third, {"status": "sent"}, history)
        fourth = await ask(proxy.client, stream=stream, messages=history, tools=tools)
        assert fourth.content == "Oslo sunny; order sent."
        assert runs == ["Oslo"]
        assert len(upstream.requests) == 2  # the model saw the program and its result only
        sent = upstream.requests[1]["messages"]
        (result,) = tool_messages(upstream.requests[1])
        assert result["content"] == "oslo sunny 3\nrome refused: True\norder sent\n"
        (program_call,) = sent[1]["tool_calls"]
        assert program_call["function"]["name"] == "run_code"
        assert result["tool_call_id"] == program_call["id"]
        assert [m["role"] for m in sent] == ["user", "assistant", "tool"]

        # The same history again, with one more question: nothing runs twice.
        upstream.script(Reply.text("again"))
        replay = [*history, {"role": "assistant", "content": fourth.content}, *USER]
        again = await ask(proxy.client, stream=stream, messages=replay, tools=tools)
        assert again.content == "again" and runs == ["Oslo"]
        (kept,) = tool_messages(upstream.requests[2])
        assert kept["content"] == result["content"]


async def test_another_key_cannot_resume_a_program(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    registry, runs = _counting_registry()
    auth = {"keys": [{"name": "a", "key": "key-a-000001"}, {"name": "b", "key": "key-b-000001"}]}
    code = "w = await t_get_weather(city='Oslo')\nprint(w['conditions'])"
    upstream.script(Reply.tool_calls([("run_code", {"code": code})]))
    async with make_proxy(registry, policy=ASK_NETWORK, code_mode=CODE_MODE, auth=auth) as proxy:
        a = proxy.client.with_options(api_key="key-a-000001")
        b = proxy.client.with_options(api_key="key-b-000001")
        first = await ask(a, stream=stream, messages=USER)
        history = _answer(first, {"approve": True}, USER)
        upstream.script(Reply.text("b's answer"))
        stolen = await ask(b, stream=stream, messages=history)
        assert stolen.content == "b's answer" and runs == []
        upstream.script(Reply.text("a's answer"))
        mine = await ask(a, stream=stream, messages=history)
        assert mine.content == "a's answer" and runs == ["Oslo"]
    assert "sunny" in tool_messages(upstream.requests[-1])[0]["content"]


async def test_a_paused_program_finishes_after_code_mode_is_turned_off(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    """Turned off for the request that answers it, a paused program still resumes (it was
    admitted under code mode, and the client has run its call): the model reads the
    `run_code` result, and is offered no `run_code` any more."""
    registry, runs = _counting_registry()
    code = "order = await lookup_order(order_id='7')\nprint('order', order['status'])"
    upstream.script(Reply.tool_calls([("run_code", {"code": code})]), Reply.text("Order 7 sent."))
    async with make_proxy(registry) as proxy:
        on = {"toolwire": {"code_mode": True}}
        first = await ask(proxy.client, stream=stream, messages=USER, tools=[LOOKUP], extra_body=on)
        (lookup,) = first.tool_calls
        assert lookup["function"]["name"] == "lookup_order"
        history = _answer(first, {"status": "sent"}, USER)
        off = {"toolwire": {"code_mode": False}}
        second = await ask(
            proxy.client, stream=stream, messages=history, tools=[LOOKUP], extra_body=off
        )
    assert second.content == "Order 7 sent." and runs == []
    sent = upstream.requests[1]
    assert "run_code" not in [t["function"]["name"] for t in sent["tools"]]
    (result,) = tool_messages(sent)
    assert result["content"] == "order sent\n"
    (program_call,) = sent["messages"][1]["tool_calls"]
    assert program_call["function"]["name"] == "run_code"
    assert result["tool_call_id"] == program_call["id"]


async def test_a_program_the_client_moved_on_from_is_answered_with_an_error(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    """The client asks something else instead of answering the program's call: the model
    reads the `run_code` call answered with an error it can act on (a valid history)."""
    code = "order = await lookup_order(order_id='7')\nprint(order)"
    upstream.script(Reply.tool_calls([("run_code", {"code": code})]), Reply.text("Fine."))
    async with make_proxy(tools_registry()) as proxy:
        on = {"toolwire": {"code_mode": True}}
        first = await ask(proxy.client, stream=stream, messages=USER, tools=[LOOKUP], extra_body=on)
        (call,) = first.tool_calls
        assistant = {"role": "assistant", "content": None, "tool_calls": [call]}
        moved_on = [*USER, assistant, {"role": "user", "content": "Never mind."}]
        second = await ask(
            proxy.client, stream=stream, messages=moved_on, tools=[LOOKUP], extra_body=on
        )
    assert second.content == "Fine."
    sent = upstream.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[1]["tool_calls"][0]["function"]["name"] == "run_code"
    assert sent[2]["tool_call_id"] == sent[1]["tool_calls"][0]["id"]
    assert sent[2]["content"] == f"Error (program_error): {LOST}"
