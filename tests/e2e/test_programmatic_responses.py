"""A client written for OpenAI's programmatic tool calling (the Responses API's beta) works
unchanged against a model behind Toolwire: it enables `programmatic_tool_calling` and marks
its function tool `allowed_callers: ["programmatic"]`; the program's call of that tool comes
back as a `function_call` item whose `caller` names the `program` item before it; the client
sends the items back with its `function_call_output` and gets the answer. Through the real
server with the official openai SDK's beta client, streamed and not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import tool_messages, tool_names
from tests.e2e.responses_client import beta_respond
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

TOOLS = [
    {"type": "programmatic_tool_calling"},
    {
        "type": "function",
        "name": "lookup_order",
        "description": "Find an order.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
        "allowed_callers": ["programmatic"],
    },
]
PROGRAM = (
    "total = await t_add(a=40, b=2)\n"
    "order = await lookup_order(order_id='7')\n"
    "print(total, order['status'])\n"
)


async def _create(client: Any, stream: bool, **request: Any) -> Any:
    return await beta_respond(
        client, stream=stream, **{"model": "fake-model", "tools": TOOLS, **request}
    )


async def test_a_program_calls_the_clients_function_as_its_caller(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls([("run_code", {"code": PROGRAM})]), Reply.text("42, and order 7 sent.")
    )
    question = [{"role": "user", "content": "Add 40 and 2, then check order 7."}]
    async with make_proxy(registry_with()) as proxy:
        first = await _create(proxy.client, stream, input=question)
        program, call = (item.model_dump(exclude_none=True) for item in first.output)
        assert program["type"] == "program" and program["code"] == PROGRAM
        assert program["fingerprint"]
        assert call["type"] == "function_call" and call["name"] == "lookup_order"
        assert json.loads(call["arguments"]) == {"order_id": "7"}
        assert call["caller"] == {"type": "program", "caller_id": program["call_id"]}
        output = {
            "type": "function_call_output",
            "call_id": call["call_id"],
            "output": '{"status": "sent"}',
            "caller": call["caller"],
        }
        second = await _create(proxy.client, stream, input=[*question, program, call, output])
    assert second.status == "completed"
    # The program resumed and ran to its end: its output shows before the answer.
    finished, message = (item.model_dump(exclude_none=True) for item in second.output)
    assert finished == {
        "type": "program_output",
        "id": finished["id"],
        "call_id": program["call_id"],
        "result": "42 sent\n",
        "status": "completed",
    }
    assert message["type"] == "message" and message["content"][0]["text"] == "42, and order 7 sent."
    offered = tool_names(upstream.requests[0])
    assert "run_code" in offered and "lookup_order" not in offered
    (result,) = tool_messages(upstream.requests[1])
    assert result["content"] == "42 sent\n"


async def test_a_program_that_runs_to_its_end_shows_its_output(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    code = "print(await t_add(a=40, b=2))"
    upstream.script(Reply.tool_calls([("run_code", {"code": code})]), Reply.text("It is 42."))
    async with make_proxy(registry_with()) as proxy:
        response = await _create(proxy.client, stream, input="Add 40 and 2.")
    program, output, message = (item.model_dump(exclude_none=True) for item in response.output)
    assert (program["type"], program["code"]) == ("program", code)
    assert output == {
        "type": "program_output",
        "id": output["id"],
        "call_id": program["call_id"],
        "result": "42\n",
        "status": "completed",
    }
    assert message["type"] == "message" and message["content"][0]["text"] == "It is 42."


async def test_a_program_that_pauses_twice_is_shown_once(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    """Resumed and paused again, the program is not shown a second time: its next call
    names it as its caller; when it ends, its output comes before the answer."""
    code = (
        "a = await lookup_order(order_id='7')\n"
        "b = await lookup_order(order_id='8')\n"
        "print(a['status'], b['status'])\n"
    )
    upstream.script(Reply.tool_calls([("run_code", {"code": code})]), Reply.text("Both sent."))
    history: list[Any] = [{"role": "user", "content": "Check orders 7 and 8."}]
    async with make_proxy(registry_with()) as proxy:
        first = await _create(proxy.client, stream, input=history)
        program, call = (item.model_dump(exclude_none=True) for item in first.output)
        output = {
            "type": "function_call_output",
            "call_id": call["call_id"],
            "output": '{"status": "sent"}',
        }
        history += [program, call, output]
        second = await _create(proxy.client, stream, input=history)
        (again,) = (item.model_dump(exclude_none=True) for item in second.output)
        assert again["type"] == "function_call" and json.loads(again["arguments"]) == {
            "order_id": "8"
        }
        assert again["caller"] == {"type": "program", "caller_id": program["call_id"]}
        output = {
            "type": "function_call_output",
            "call_id": again["call_id"],
            "output": '{"status": "late"}',
        }
        history += [again, output]
        third = await _create(proxy.client, stream, input=history)
    finished, message = (item.model_dump(exclude_none=True) for item in third.output)
    assert (finished["type"], finished["call_id"]) == ("program_output", program["call_id"])
    assert finished["result"] == "sent late\n"
    assert message["content"][0]["text"] == "Both sent."
    assert len(upstream.requests) == 2


async def test_a_deferred_function_stays_deferred_until_the_program_finds_it(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    """The client's deferred function is not among `run_code`'s signatures: the program's
    `search_tools` finds it, and its call goes to the client as any program's call does."""
    code = (
        "found = await search_tools(query='find order')\n"
        "order = await lookup_order(order_id='7')\n"
        "print(found[0]['name'], order['status'])\n"
    )
    deferred = {**TOOLS[1], "defer_loading": True}
    tools = [TOOLS[0], {"type": "tool_search"}, deferred]
    upstream.script(Reply.tool_calls([("run_code", {"code": code})]), Reply.text("Order 7 sent."))
    question = [{"role": "user", "content": "Check order 7."}]
    async with make_proxy(registry_with()) as proxy:
        first = await _create(proxy.client, stream, input=question, tools=tools)
        program, call = (item.model_dump(exclude_none=True) for item in first.output)
        assert call["name"] == "lookup_order" and call["caller"]["caller_id"] == program["call_id"]
        output = {
            "type": "function_call_output",
            "call_id": call["call_id"],
            "output": '{"status": "sent"}',
        }
        history = [*question, program, call, output]
        second = await _create(proxy.client, stream, input=history, tools=tools)
    finished, _ = (item.model_dump(exclude_none=True) for item in second.output)
    assert finished["result"] == "lookup_order sent\n"
    (run_code,) = [t for t in upstream.requests[0]["tools"] if t["function"]["name"] == "run_code"]
    description = run_code["function"]["description"]
    assert "async def search_tools(" in description and "lookup_order" not in description
