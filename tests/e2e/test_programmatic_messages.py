"""A client written for Anthropic's programmatic tool calling works unchanged against a
model behind Toolwire: it declares the code execution tool and marks its own tool as
callable from programs; the program's call of that tool comes back as a `tool_use` block
whose `caller` names the `server_tool_use` block of the program; the client answers with a
`tool_result`, sends the blocks back as they came, and gets the program's
`code_execution_tool_result` (it resumed and ran to its end) and the answer. Through the real
server with the official anthropic SDK, streamed and not."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic import AsyncAnthropic

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import tool_messages, tool_names
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

CODE_EXECUTION = {"type": "code_execution_20250825", "name": "code_execution"}
ORDERS = {
    "name": "lookup_order",
    "description": "Find an order.",
    "input_schema": {
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
    },
    "allowed_callers": ["code_execution_20250825"],
}
PROGRAM = (
    "total = await t_add(a=40, b=2)\n"
    "order = await lookup_order(order_id='7')\n"
    "print(total, order['status'])\n"
)


async def _create(client: AsyncAnthropic, stream: bool, **request: Any) -> Any:
    request = {"model": "fake-model", "max_tokens": 256, **request}
    if not stream:
        return await client.messages.create(**request)
    async with client.messages.stream(**request) as events:
        return await events.get_final_message()


async def test_a_program_calls_the_clients_tool_through_its_caller(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls([("run_code", {"code": PROGRAM})]), Reply.text("42, and order 7 sent.")
    )
    question = [{"role": "user", "content": "Add 40 and 2, then check order 7."}]
    async with make_proxy(registry_with()) as proxy:
        base = proxy.base_url.removesuffix("/v1")
        async with AsyncAnthropic(base_url=base, api_key="-", max_retries=0) as client:
            tools = [CODE_EXECUTION, ORDERS]
            first = await _create(client, stream, messages=question, tools=tools)
            assert first.stop_reason == "tool_use"
            server, use = first.content
            assert (server.type, server.name) == ("server_tool_use", "code_execution")
            assert server.input == {"code": PROGRAM}
            assert (use.type, use.name, use.input) == (
                "tool_use",
                "lookup_order",
                {"order_id": "7"},
            )
            assert use.caller.type == "code_execution_20250825"
            assert use.caller.tool_id == server.id
            history = [
                *question,
                {"role": "assistant", "content": [b.model_dump() for b in first.content]},
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": use.id,
                            "content": '{"status": "sent"}',
                        }
                    ],
                },
            ]
            second = await _create(client, stream, messages=history, tools=tools)
    assert second.stop_reason == "end_turn"
    # The program resumed and ran to its end: its result block comes before the answer.
    finished, text = second.content
    assert finished.type == "code_execution_tool_result" and finished.tool_use_id == server.id
    assert (finished.content.stdout, finished.content.return_code) == ("42 sent\n", 0)
    assert text.text == "42, and order 7 sent."
    offered = tool_names(upstream.requests[0])
    assert "run_code" in offered and "lookup_order" not in offered  # programmatic only
    (run_code,) = [t for t in upstream.requests[0]["tools"] if t["function"]["name"] == "run_code"]
    assert "async def lookup_order(*, order_id: str) -> Any:" in run_code["function"]["description"]
    assert all("allowed_callers" not in t for t in upstream.requests[0]["tools"])
    (result,) = tool_messages(upstream.requests[1])
    assert result["content"] == "42 sent\n"
    assert len(upstream.requests) == 2


async def test_a_program_that_runs_to_its_end_shows_its_result_block(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    code = "print(await t_add(a=40, b=2))"
    upstream.script(Reply.tool_calls([("run_code", {"code": code})]), Reply.text("It is 42."))
    async with make_proxy(registry_with()) as proxy:
        base = proxy.base_url.removesuffix("/v1")
        async with AsyncAnthropic(base_url=base, api_key="-", max_retries=0) as client:
            message = await _create(
                client,
                stream,
                messages=[{"role": "user", "content": "Add 40 and 2."}],
                tools=[CODE_EXECUTION],
            )
    server, result, text = message.content
    assert (server.type, server.name, server.input) == (
        "server_tool_use",
        "code_execution",
        {"code": code},
    )
    assert result.type == "code_execution_tool_result" and result.tool_use_id == server.id
    assert (result.content.stdout, result.content.return_code) == ("42\n", 0)
    assert text.text == "It is 42." and message.stop_reason == "end_turn"


async def test_a_program_that_pauses_twice_is_shown_once(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    """Resumed and paused again, the program's `server_tool_use` block is not repeated:
    its next `tool_use` names it as its caller; when it ends, its result block comes before
    the answer."""
    code = (
        "a = await lookup_order(order_id='7')\n"
        "b = await lookup_order(order_id='8')\n"
        "print(a['status'], b['status'])\n"
    )
    upstream.script(Reply.tool_calls([("run_code", {"code": code})]), Reply.text("Both sent."))
    history: list[Any] = [{"role": "user", "content": "Check orders 7 and 8."}]
    tools = [CODE_EXECUTION, ORDERS]
    async with make_proxy(registry_with()) as proxy:
        base = proxy.base_url.removesuffix("/v1")
        async with AsyncAnthropic(base_url=base, api_key="-", max_retries=0) as client:
            first = await _create(client, stream, messages=history, tools=tools)
            server, use = first.content
            history += _answered(first, use.id, '{"status": "sent"}')
            second = await _create(client, stream, messages=history, tools=tools)
            (again,) = second.content
            assert (again.type, again.input) == ("tool_use", {"order_id": "8"})
            assert again.caller.tool_id == server.id
            history += _answered(second, again.id, '{"status": "late"}')
            third = await _create(client, stream, messages=history, tools=tools)
    finished, text = third.content
    assert finished.type == "code_execution_tool_result" and finished.tool_use_id == server.id
    assert finished.content.stdout == "sent late\n"
    assert text.text == "Both sent."
    assert len(upstream.requests) == 2


def _answered(message: Any, tool_use_id: str, result: str) -> list[dict[str, Any]]:
    """The assistant turn as it came, and the client's result for its tool_use."""
    return [
        {"role": "assistant", "content": [b.model_dump() for b in message.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_use_id, "content": result}],
        },
    ]
