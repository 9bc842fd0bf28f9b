"""The tool loop through the real server, with the OpenAI SDK, streamed and not."""

from __future__ import annotations

import json

import pytest

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask, tool_messages, tool_names
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

USER = [{"role": "user", "content": "What is the weather in Paris?"}]


async def test_one_call_then_answer(make_proxy, upstream: FakeUpstream, stream: bool) -> None:
    upstream.script(
        Reply.tool_calls([("t_get_weather", {"city": "Paris"})]),
        Reply.text("It is sunny in Paris."),
    )
    async with make_proxy(registry_with()) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "It is sunny in Paris."
    assert out.finish_reason == "stop"
    assert not out.tool_calls
    assert "t_get_weather" in tool_names(upstream.requests[0])
    second = upstream.requests[1]
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"][0]["function"]["name"] == "t_get_weather"
    (result,) = tool_messages(second)
    assert result["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert json.loads(result["content"]) == {
        "city": "Paris",
        "temperature_c": 21,
        "conditions": "sunny",
    }


@pytest.mark.parametrize("style", ["vllm", "interleaved", "ollama"])
@pytest.mark.parametrize("ids", [True, False], ids=["ids", "no-ids"])
async def test_parallel_calls_each_style(
    make_proxy, upstream: FakeUpstream, stream: bool, style: str, ids: bool
) -> None:
    upstream.script(
        Reply.tool_calls(
            [("t_get_weather", {"city": "Paris"}), ("t_add", {"a": 2, "b": 40})],
            style=style,
            ids=ids,
        ),
        Reply.text("done"),
    )
    async with make_proxy(registry_with()) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "done"
    second = upstream.requests[1]
    calls = second["messages"][1]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["t_get_weather", "t_add"]
    assert all(c["id"] for c in calls) and len({c["id"] for c in calls}) == 2
    assert all(isinstance(c["function"]["arguments"], str) for c in calls)
    results = tool_messages(second)
    assert [r["tool_call_id"] for r in results] == [c["id"] for c in calls]
    assert results[1]["content"] == "42"


async def test_several_rounds(make_proxy, upstream: FakeUpstream, stream: bool) -> None:
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 1, "b": 2})]),
        Reply.tool_calls([("t_add", {"a": 3, "b": 4})], style="ollama"),
        Reply.tool_calls([("t_get_weather", {"city": "Oslo"})]),
        Reply.text("finished"),
    )
    async with make_proxy(registry_with()) as proxy:
        out = (
            await ask(
                proxy.client, stream=stream, messages=USER, stream_options={"include_usage": True}
            )
            if stream
            else await ask(proxy.client, stream=stream, messages=USER)
        )
    assert out.content == "finished"
    assert len(upstream.requests) == 4
    assert [m["content"] for m in tool_messages(upstream.requests[3])][:2] == ["3", "7"]
    assert out.usage == {"prompt_tokens": 40, "completion_tokens": 20, "total_tokens": 60}


async def test_content_before_calls_reaches_client(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 1, "b": 1})], content="Let me add. "),
        Reply.text("It is 2."),
    )
    async with make_proxy(registry_with()) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "Let me add. It is 2."
    assert upstream.requests[1]["messages"][1]["content"] == "Let me add. "


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"city": "Par', "Error (invalid_json)"),
        ({"town": "Paris"}, "Error (invalid_arguments)"),
        ({"city": 12}, "Error (invalid_arguments)"),
    ],
    ids=["invalid-json", "missing-field", "wrong-type"],
)
async def test_bad_arguments_are_answered(
    make_proxy, upstream: FakeUpstream, stream: bool, arguments: object, expected: str
) -> None:
    upstream.script(Reply.tool_calls([("t_get_weather", arguments)]), Reply.text("sorry"))
    async with make_proxy(registry_with()) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "sorry"
    (result,) = tool_messages(upstream.requests[1])
    assert result["content"].startswith(expected)


async def test_unknown_raising_and_timed_out_tools_are_answered(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls(
            [
                ("no_such_tool", {}),
                ("t_explode", {"reason": "disk"}),
                ("t_nap", {"seconds": 5}),
                ("t_add", {"a": 1, "b": 1}),
            ]
        ),
        Reply.text("handled"),
    )
    async with make_proxy(registry_with()) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "handled"
    contents = [m["content"] for m in tool_messages(upstream.requests[1])]
    assert len(contents) == 4
    assert contents[0].startswith("Error (unknown_tool)")
    assert contents[1].startswith("Error (exception)") and "boom: disk" in contents[1]
    assert contents[2].startswith("Error (timeout)")
    assert contents[3] == "2"


async def test_tool_output_attachments_reach_upstream(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    from registry import ToolOutput

    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}

    async def snapshot(camera: str) -> ToolOutput:
        """Take a picture.

        Args:
            camera: which camera.
        """
        return ToolOutput(f"picture from {camera}", attachments=(image,))

    async def broken() -> ToolOutput:
        """A remote tool that reports failure."""
        return ToolOutput("the service said no", is_error=True)

    registry = registry_with()
    registry.register(snapshot, namespace="t")
    registry.register(broken, namespace="t")
    upstream.script(
        Reply.tool_calls([("t_snapshot", {"camera": "door"}), ("t_broken", {})]),
        Reply.text("I see a door."),
    )
    async with make_proxy(registry) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "I see a door."
    sent = upstream.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "user"]
    assert sent[2]["content"] == "picture from door"
    assert sent[3]["content"] == "Error (tool_error): the service said no"
    assert sent[4]["content"][1] == image


async def test_call_cut_off_by_length_is_never_run(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls([("t_explode", '{"reason": "half')], finish_reason="length", content="Hm")
    )
    async with make_proxy(registry_with()) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.finish_reason == "length"
    assert out.content == "Hm"
    assert not out.tool_calls
    assert len(upstream.requests) == 1
