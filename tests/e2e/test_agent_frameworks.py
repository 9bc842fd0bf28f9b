"""Agent frameworks in their default set-up, which speaks the Responses API, pointed at Toolwire.

The OpenAI Agents SDK turns a model name string into `OpenAIResponsesModel`; pydantic-ai's
`"openai:<model>"` is its `OpenAIResponsesModel` too, and reads OPENAI_BASE_URL and
OPENAI_API_KEY. Tools in the proxy's registry run on the proxy and never show in the
framework's history; the agent's own tools come back as function calls the framework runs.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest
from openai import AsyncOpenAI

from testing.upstream import FakeUpstream, Reply
from tests.conftest import Proxy, serve_proxy
from tests.e2e.tools import registry_with

# The frameworks are imported by the helpers and tests that use them: only the xdist worker
# that runs this file loads them (~1.8 s of CPU), not every worker as it collects.
if TYPE_CHECKING:
    import agents
    import pydantic_ai

STREAMED = pytest.mark.parametrize("stream", [False, True], ids=["run", "streamed"])

MODEL = "fake-model"
INSTRUCTIONS = "Be brief."
DEMO_CONFIG = {
    "upstreams": [{"name": "demo", "base_url": "demo", "models": ["*"]}],
    "tools": [{"python": "examples/tools.py"}],
}
PROXY_TOOL_SCRIPT = (
    Reply.tool_calls([("t_get_weather", {"city": "Oslo"})]),
    Reply.text("Oslo is sunny and 21 degrees."),
)
OWN_TOOL_SCRIPT = (
    Reply.tool_calls([("read_clock", {"zone": "UTC"})]),
    Reply.text("It is noon in UTC."),
)
# One model turn calls a proxy tool and the agent's tool; then the user asks again.
MIXED_SCRIPT = (
    Reply.tool_calls([("t_get_weather", {"city": "Oslo"}), ("read_clock", {"zone": "UTC"})]),
    Reply.text("Sunny in Oslo at noon."),
    Reply.text("Still sunny."),
)


def read_clock(zone: str) -> str:
    """The agent's own clock; the framework runs it, never the proxy.

    Args:
        zone: the time zone.
    """
    return f"12:00 in {zone}"


def tool_results(request: dict[str, Any]) -> list[str]:
    """The contents of the tool messages of one upstream request."""
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def assert_whole_history_upstream(upstream: FakeUpstream) -> None:
    """The follow-up reached the model with both calls of the mixed turn and their results."""
    follow_up = upstream.requests[-1]
    roles = [m["role"] for m in follow_up["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "user"]
    calls = follow_up["messages"][2]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["t_get_weather", "read_clock"]
    results = {m["tool_call_id"]: m["content"] for m in follow_up["messages"][3:5]}
    assert json.loads(results[calls[0]["id"]])["city"] == "Oslo"
    assert results[calls[1]["id"]] == "12:00 in UTC"
    assert follow_up["messages"][5]["content"] == "Sunny in Oslo at noon."


async def assert_stored(proxy: Proxy, response_ids: list[str | None], last_text: str) -> None:
    """Each model call was a `/v1/responses` call the proxy kept; the last one said `last_text`."""
    assert response_ids and all(rid and rid.startswith("resp_") for rid in response_ids)
    last = await proxy.client.responses.retrieve(str(response_ids[-1]))
    assert last.output_text == last_text


# The OpenAI Agents SDK.


@asynccontextmanager
async def agents_sdk_at(proxy: Proxy, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """The SDK's documented default set-up, pointed at the proxy; the old default comes back."""
    import agents
    from agents.models import _openai_shared
    from agents.models.multi_provider import MultiProvider
    from agents.models.openai_responses import OpenAIResponsesModel

    monkeypatch.setattr(
        _openai_shared, "_default_openai_client", _openai_shared.get_default_openai_client()
    )
    async with AsyncOpenAI(base_url=proxy.base_url, api_key="test-key", max_retries=0) as client:
        agents.set_default_openai_client(client, use_for_tracing=False)
        agents.set_tracing_disabled(True)
        # What `Runner` does with a model name string: the Responses API, not Chat Completions.
        assert isinstance(MultiProvider().get_model(MODEL), OpenAIResponsesModel)
        yield


async def run_openai_agent(
    agent: agents.Agent[Any], prompt: str | list[Any], *, stream: bool
) -> tuple[agents.RunResultBase, str | None]:
    """Run the agent; streamed, also the text its `output_text` deltas added up to."""
    import agents

    if not stream:
        return await agents.Runner.run(agent, prompt), None
    result = agents.Runner.run_streamed(agent, prompt)
    deltas = [
        event.data.delta
        async for event in result.stream_events()
        if event.type == "raw_response_event" and event.data.type == "response.output_text.delta"
    ]
    assert result.is_complete
    return result, "".join(deltas)


def openai_agent(*tools: agents.Tool) -> agents.Agent[Any]:
    import agents

    return agents.Agent(name="assistant", instructions=INSTRUCTIONS, model=MODEL, tools=list(tools))


@STREAMED
async def test_agents_sdk_proxy_tool(
    make_proxy, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    from agents.items import ToolCallItem

    upstream.script(*PROXY_TOOL_SCRIPT)
    async with make_proxy(registry_with()) as proxy, agents_sdk_at(proxy, monkeypatch):
        result, streamed = await run_openai_agent(openai_agent(), "Weather in Oslo?", stream=stream)
        assert result.final_output == "Oslo is sunny and 21 degrees."
        assert streamed == (result.final_output if stream else None)
        # The proxy ran the tool inside one Responses call: the SDK saw no tool round.
        assert len(result.raw_responses) == 1
        assert not [i for i in result.new_items if isinstance(i, ToolCallItem)]
        await assert_stored(
            proxy, [r.response_id for r in result.raw_responses], result.final_output
        )
    assert len(upstream.requests) == 2
    (weather,) = tool_results(upstream.requests[1])
    assert json.loads(weather) == {"city": "Oslo", "temperature_c": 21, "conditions": "sunny"}


@STREAMED
async def test_agents_sdk_own_tool(
    make_proxy, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    import agents
    from agents.items import ToolCallItem, ToolCallOutputItem

    upstream.script(*OWN_TOOL_SCRIPT)
    agent = openai_agent(agents.function_tool(read_clock))
    async with make_proxy(registry_with()) as proxy, agents_sdk_at(proxy, monkeypatch):
        result, streamed = await run_openai_agent(agent, "What time is it?", stream=stream)
        assert result.final_output == "It is noon in UTC."
        assert streamed == (result.final_output if stream else None)
        (call,) = [i for i in result.new_items if isinstance(i, ToolCallItem)]
        assert call.raw_item.name == "read_clock"  # type: ignore[union-attr]
        (output,) = [i for i in result.new_items if isinstance(i, ToolCallOutputItem)]
        assert output.output == "12:00 in UTC"
        await assert_stored(
            proxy, [r.response_id for r in result.raw_responses], result.final_output
        )
    assert len(upstream.requests) == 2
    assert tool_results(upstream.requests[-1]) == ["12:00 in UTC"]
    offered = [t["function"]["name"] for t in upstream.requests[0]["tools"]]
    assert "read_clock" in offered and "t_get_weather" in offered


@STREAMED
async def test_agents_sdk_mixed_turn_then_follow_up(
    make_proxy, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    import agents
    from agents.items import ToolCallItem

    upstream.script(*MIXED_SCRIPT)
    agent = openai_agent(agents.function_tool(read_clock))
    async with make_proxy(registry_with()) as proxy, agents_sdk_at(proxy, monkeypatch):
        first, _ = await run_openai_agent(agent, "Oslo weather and the time?", stream=stream)
        assert first.final_output == "Sunny in Oslo at noon."
        # The SDK sees only its own call; the proxy keeps the weather round for later.
        (call,) = [i for i in first.new_items if isinstance(i, ToolCallItem)]
        assert call.raw_item.name == "read_clock"  # type: ignore[union-attr]
        history = [*first.to_input_list(), {"role": "user", "content": "And now?"}]
        second, _ = await run_openai_agent(agent, history, stream=stream)
    assert second.final_output == "Still sunny."
    assert len(upstream.requests) == 3
    assert_whole_history_upstream(upstream)


@STREAMED
async def test_agents_sdk_against_the_demo_model(
    monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    import agents

    async with serve_proxy(DEMO_CONFIG) as proxy, agents_sdk_at(proxy, monkeypatch):
        agent = agents.Agent(name="assistant", instructions=INSTRUCTIONS, model="toolwire-demo")
        result, streamed = await run_openai_agent(
            agent, "What's the weather in Paris?", stream=stream
        )
    assert result.final_output.startswith("The weather in Paris is")
    assert streamed == (result.final_output if stream else None)


def calculate(expression: str) -> str:
    """The agent's own calculator, which the demo model picks over the proxy's.

    Args:
        expression: the arithmetic to evaluate.
    """
    CALCULATED.append(expression)
    return "42"


CALCULATED: list[str] = []


@STREAMED
async def test_agents_sdk_own_tool_against_the_demo_model(
    monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    import agents
    from agents.items import ToolCallItem

    # The README's mixed turn on defaults: the proxy runs its weather tool, the agent's own
    # `calculate` comes back to the agent and runs there.
    CALCULATED.clear()
    config = {**DEMO_CONFIG, "tools": [{"python": "examples/tools.py", "namespace": "demo"}]}
    async with serve_proxy(config) as proxy, agents_sdk_at(proxy, monkeypatch):
        agent = agents.Agent(
            name="assistant",
            instructions=INSTRUCTIONS,
            model="toolwire-demo",
            tools=[agents.function_tool(calculate)],
        )
        result, _ = await run_openai_agent(
            agent, "What's the weather in Paris? And calculate 6*7.", stream=stream
        )
    assert CALCULATED == ["6*7"]
    (call,) = [i for i in result.new_items if isinstance(i, ToolCallItem)]
    assert call.raw_item.name == "calculate"  # type: ignore[union-attr]
    assert "The weather in Paris is" in result.final_output
    assert "6*7 = 42." in result.final_output


# pydantic-ai.


@asynccontextmanager
async def pydantic_agent_at(
    proxy: Proxy, monkeypatch: pytest.MonkeyPatch, model: str = f"openai:{MODEL}"
) -> AsyncIterator[pydantic_ai.Agent[None, str]]:
    """`Agent("openai:<model>")` configured by the environment, as pydantic-ai documents."""
    import pydantic_ai
    from pydantic_ai.models.openai import OpenAIResponsesModel

    monkeypatch.setenv("OPENAI_BASE_URL", proxy.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    agent = pydantic_ai.Agent(model, instructions=INSTRUCTIONS)
    assert isinstance(agent.model, OpenAIResponsesModel)
    # Entering the agent closes the provider's HTTP client on the way out.
    async with agent:
        yield agent


async def run_pydantic_agent(
    agent: pydantic_ai.Agent[None, str],
    prompt: str,
    *,
    stream: bool,
    message_history: list[Any] | None = None,
) -> tuple[str, list[Any], str | None]:
    """The output, the run's messages and, streamed, the text its deltas added up to."""
    if not stream:
        result = await agent.run(prompt, message_history=message_history)
        return result.output, result.all_messages(), None
    async with agent.run_stream(prompt, message_history=message_history) as streamed:
        deltas = [delta async for delta in streamed.stream_text(delta=True)]
        output = await streamed.get_output()
    return output, streamed.all_messages(), "".join(deltas)


def response_ids(messages: list[Any]) -> list[str | None]:
    from pydantic_ai.messages import ModelResponse

    return [m.provider_response_id for m in messages if isinstance(m, ModelResponse)]


def parts(messages: list[Any], kind: type) -> list[Any]:
    return [p for m in messages for p in m.parts if isinstance(p, kind)]


@STREAMED
async def test_pydantic_ai_proxy_tool(
    make_proxy, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    from pydantic_ai.messages import ToolCallPart

    upstream.script(*PROXY_TOOL_SCRIPT)
    async with (
        make_proxy(registry_with()) as proxy,
        pydantic_agent_at(proxy, monkeypatch) as agent,
    ):
        output, messages, streamed = await run_pydantic_agent(
            agent, "Weather in Oslo?", stream=stream
        )
        assert output == "Oslo is sunny and 21 degrees."
        assert streamed == (output if stream else None)
        # The proxy ran the tool inside one Responses call: pydantic-ai saw no tool round.
        assert not parts(messages, ToolCallPart)
        assert len(response_ids(messages)) == 1
        await assert_stored(proxy, response_ids(messages), output)
    assert len(upstream.requests) == 2
    (weather,) = tool_results(upstream.requests[1])
    assert json.loads(weather) == {"city": "Oslo", "temperature_c": 21, "conditions": "sunny"}


@STREAMED
async def test_pydantic_ai_own_tool(
    make_proxy, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    from pydantic_ai.messages import ToolCallPart, ToolReturnPart

    upstream.script(*OWN_TOOL_SCRIPT)
    async with (
        make_proxy(registry_with()) as proxy,
        pydantic_agent_at(proxy, monkeypatch) as agent,
    ):
        agent.tool_plain(read_clock)
        output, messages, streamed = await run_pydantic_agent(
            agent, "What time is it?", stream=stream
        )
        assert output == "It is noon in UTC."
        assert streamed == (output if stream else None)
        (call,) = parts(messages, ToolCallPart)
        assert call.tool_name == "read_clock" and call.args_as_dict() == {"zone": "UTC"}
        (returned,) = parts(messages, ToolReturnPart)
        assert returned.content == "12:00 in UTC"
        await assert_stored(proxy, response_ids(messages), output)
    assert len(upstream.requests) == 2
    assert tool_results(upstream.requests[-1]) == ["12:00 in UTC"]
    offered = [t["function"]["name"] for t in upstream.requests[0]["tools"]]
    assert "read_clock" in offered and "t_get_weather" in offered


@STREAMED
async def test_pydantic_ai_mixed_turn_then_follow_up(
    make_proxy, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    from pydantic_ai.messages import ToolCallPart

    upstream.script(*MIXED_SCRIPT)
    async with (
        make_proxy(registry_with()) as proxy,
        pydantic_agent_at(proxy, monkeypatch) as agent,
    ):
        agent.tool_plain(read_clock)
        output, messages, _ = await run_pydantic_agent(
            agent, "Oslo weather and the time?", stream=stream
        )
        assert output == "Sunny in Oslo at noon."
        # pydantic-ai sees only its own call; the proxy keeps the weather round for later.
        assert [p.tool_name for p in parts(messages, ToolCallPart)] == ["read_clock"]
        output, _, _ = await run_pydantic_agent(
            agent, "And now?", stream=stream, message_history=messages
        )
    assert output == "Still sunny."
    assert len(upstream.requests) == 3
    assert_whole_history_upstream(upstream)


@STREAMED
async def test_pydantic_ai_against_the_demo_model(
    monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    async with (
        serve_proxy(DEMO_CONFIG) as proxy,
        pydantic_agent_at(proxy, monkeypatch, "openai:toolwire-demo") as agent,
    ):
        output, _, streamed = await run_pydantic_agent(
            agent, "What's the weather in Paris?", stream=stream
        )
    assert output.startswith("The weather in Paris is")
    assert streamed == (output if stream else None)
