"""Code mode through the real server with the OpenAI SDK, streamed and not: the model is
offered `run_code` with the tools as typed signatures; its program's inner calls each pass
the gate (run, denied, in parallel, in a loop), and what it prints is the call's result."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic import AsyncAnthropic

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask, tool_messages, tool_names
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

USER = [{"role": "user", "content": "Weather in three cities, and 2 + 40?"}]
ON = {"enabled": True}


def _program(code: str) -> Reply:
    return Reply.tool_calls([("run_code", {"code": code})])


def _result(upstream: FakeUpstream) -> str:
    (message,) = tool_messages(upstream.requests[1])
    content: str = message["content"]
    return content


async def test_a_program_calls_tools_in_a_loop_and_in_parallel(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    code = (
        "import asyncio\n"
        "cities = ['Paris', 'Tokyo', 'Lima']\n"
        "found = await asyncio.gather(*[t_get_weather(city=c) for c in cities])\n"
        "total = 0\n"
        "for n in range(3):\n"
        "    total = await t_add(a=total, b=n)\n"
        "print([w['city'] for w in found], total)\n"
    )
    upstream.script(_program(code), Reply.text("Sunny everywhere; 3."))
    async with make_proxy(registry_with(), code_mode=ON) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "Sunny everywhere; 3."
    first = upstream.requests[0]
    assert "run_code" in tool_names(first) and "t_get_weather" not in tool_names(first)
    (run_code,) = [t for t in first["tools"] if t["function"]["name"] == "run_code"]
    description = run_code["function"]["description"]
    assert "async def t_get_weather(*, city: str) -> Any:" in description
    assert "async def t_add(*, a: int, b: int) -> Any:" in description
    assert _result(upstream) == "['Paris', 'Tokyo', 'Lima'] 3\n"


async def test_every_inner_call_passes_the_gate(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    code = (
        "try:\n"
        "    await t_explode(reason='x')\n"
        "except RuntimeError as e:\n"
        "    print('refused:', e)\n"
        "print(await t_add(a=1, b=2))\n"
    )
    upstream.script(_program(code), Reply.text("done"))
    policy = {"rules": [{"match": {"name": "t.explode"}, "action": "deny"}]}
    async with make_proxy(registry_with(), code_mode=ON, policy=policy) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "done"
    result = _result(upstream)
    assert result.startswith("refused: Error (denied)") and result.endswith("\n3\n")


async def test_a_program_error_reaches_the_model_and_the_turn_goes_on(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        _program("print('start')\nopen('/etc/passwd')"),
        _program("while True:\n    pass"),
        _program("t_get_weather(city='Paris')\nprint('forgot await')"),
        Reply.text("gave up"),
    )
    limits = {"cpu_s": 0.5}
    async with make_proxy(registry_with(), code_mode={**ON, "limits": limits}) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "gave up"
    results = [m["content"] for m in tool_messages(upstream.requests[3])]
    assert results[0].startswith("Error (program_error): PermissionError")
    assert "Printed before it stopped:\nstart" in results[0]
    assert results[1].startswith("Error (program_error): TimeoutError: the program computed")
    assert (
        "forgot await" in results[2]
        and "[not run: t_get_weather called without await" in (results[2])
    )


async def test_code_mode_per_request_and_off_by_default(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(Reply.text("a"), Reply.text("b"))
    async with make_proxy(registry_with()) as proxy:
        await ask(proxy.client, stream=stream, messages=USER)
        await ask(
            proxy.client, stream=stream, messages=USER, extra_body={"toolwire": {"code_mode": True}}
        )
    assert "run_code" not in tool_names(upstream.requests[0])
    assert "t_get_weather" in tool_names(upstream.requests[0])
    assert tool_names(upstream.requests[1])[-1] == "run_code"


async def test_tools_outside_code_mode_stay_direct(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(Reply.tool_calls([("t_get_weather", {"city": "Oslo"})]), Reply.text("ok"))
    config = {**ON, "tools": {"tags": ["never-set"]}}
    async with make_proxy(registry_with(), code_mode=config) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "ok"
    assert "t_get_weather" in tool_names(upstream.requests[0])
    assert json.loads(_result(upstream))["city"] == "Oslo"


async def test_each_key_has_its_own_code_mode_and_its_own_tools(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    auth = {
        "keys": [
            {"name": "a", "key": "key-a-000001", "code_mode": True},
            {"name": "b", "key": "key-b-000001", "namespaces": ["other"], "code_mode": False},
            {"name": "c", "key": "key-c-000001", "namespaces": ["other"], "code_mode": True},
        ]
    }
    code = "print(await t_add(a=2, b=40))"
    upstream.script(_program(code), Reply.text("a done"), Reply.text("b"), _program(code))
    upstream.script(Reply.text("c done"))
    async with make_proxy(registry_with(), auth=auth) as proxy:
        for key in ("key-a-000001", "key-b-000001", "key-c-000001"):
            client = proxy.client.with_options(api_key=key)
            await ask(client, stream=stream, messages=USER)
    a_first, a_second, b_only, c_first, c_second = upstream.requests
    assert tool_names(a_first)[-1] == "run_code" and _content(a_second) == "42\n"
    assert "run_code" not in tool_names(b_only)
    # Key c's scope holds no tool of namespace t: inside its program the tool does not exist.
    assert tool_names(c_first) == ["run_code"]
    assert "NameError: name 't_add' is not defined" in _content(c_second)


def _content(body: dict[str, Any]) -> str:
    (message,) = tool_messages(body)
    content: str = message["content"]
    return content


async def test_the_responses_and_messages_fronts_run_programs_too(
    make_proxy: Any, upstream: FakeUpstream, stream: bool
) -> None:
    code = "import asyncio\nrs = await asyncio.gather(t_add(a=1, b=1), t_add(a=2, b=2))\nprint(rs)"
    upstream.script(_program(code), Reply.text("four and two"))
    upstream.script(_program(code), Reply.text("two and four"))
    async with make_proxy(registry_with(), code_mode=ON) as proxy:
        responses = await _responses(proxy, stream)
        messages = await _messages(proxy, stream)
    assert (responses, messages) == ("four and two", "two and four")
    assert _result(upstream) == "[2, 4]\n"
    (third_result,) = tool_messages(upstream.requests[3])
    assert third_result["content"] == "[2, 4]\n"


async def _responses(proxy: Any, stream: bool) -> str:
    if not stream:
        response = await proxy.client.responses.create(model="fake-model", input="sum")
        text: str = response.output_text
        return text
    async with proxy.client.responses.stream(model="fake-model", input="sum") as events:
        async for _ in events:
            pass
        final = await events.get_final_response()
    streamed: str = final.output_text
    return streamed


async def _messages(proxy: Any, stream: bool) -> str:
    base = proxy.base_url.removesuffix("/v1")
    request: dict[str, Any] = {
        "model": "fake-model",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "sum"}],
    }
    async with AsyncAnthropic(base_url=base, api_key="-", max_retries=0, timeout=30) as client:
        if not stream:
            message = await client.messages.create(**request)
        else:
            async with client.messages.stream(**request) as events:
                message = await events.get_final_message()
    return "".join(block.text for block in message.content if block.type == "text")
