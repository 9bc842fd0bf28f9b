"""The Responses API front over the real server, with the official SDK as the client."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from registry import ToolRegistry
from testing.upstream import FakeUpstream, Reply
from tests.e2e.responses_client import items, kinds, respond
from tests.e2e.tools import registry_with

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

MODEL = "fake-model"
CLOCK = {
    "type": "function",
    "name": "read_clock",
    "description": "The client's own clock.",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
}


def counting_registry() -> tuple[ToolRegistry, list[dict[str, Any]]]:
    """The test tools, plus `ops.launch` (namespace ops) which records every run."""
    registry = registry_with()
    runs: list[dict[str, Any]] = []

    def launch(target: str) -> str:
        """Launch something.

        Args:
            target: what to launch.
        """
        runs.append({"target": target})
        return f"launched {target}"

    registry.register(launch, namespace="ops", tags=["destructive"])
    return registry, runs


def roles(request: dict[str, Any]) -> list[str]:
    return [m["role"] for m in request["messages"]]


async def test_text_answer(make_proxy, upstream: FakeUpstream, stream: bool) -> None:
    upstream.script(Reply.text("Hello there, traveller."))
    async with make_proxy(registry_with()) as proxy:
        response = await respond(
            proxy.client, stream=stream, model=MODEL, input="hi", instructions="Be brief."
        )
    assert response.status == "completed"
    assert response.output_text == "Hello there, traveller."
    assert kinds(response) == ["message"]
    assert response.usage.input_tokens == 10 and response.usage.output_tokens == 5
    sent = upstream.requests[0]
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]


async def test_tool_rounds_are_hidden_by_default(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls([("t_get_weather", {"city": "Oslo"})]),
        Reply.tool_calls([("t_add", {"a": 2, "b": 3})], style="ollama"),
        Reply.text("Oslo is sunny; 2 + 3 = 5."),
    )
    async with make_proxy(registry_with()) as proxy:
        response = await respond(proxy.client, stream=stream, model=MODEL, input="Oslo? 2+3?")
    assert kinds(response) == ["message"]
    assert response.output_text == "Oslo is sunny; 2 + 3 = 5."
    assert response.usage.input_tokens == 30 and response.usage.total_tokens == 45
    last = upstream.requests[2]
    assert roles(last) == ["user", "assistant", "tool", "assistant", "tool"]
    assert json.loads(last["messages"][2]["content"])["city"] == "Oslo"
    assert last["messages"][4]["content"] == "5"


async def test_client_function_is_handed_back_and_continued(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls([("read_clock", {"zone": "UTC"})]),
        Reply.text("It is noon."),
        Reply.text("Still noon."),
    )
    async with make_proxy(registry_with()) as proxy:
        first = await respond(
            proxy.client, stream=stream, model=MODEL, input="time?", tools=[CLOCK]
        )
        (call,) = items(first, "function_call")
        assert call.name == "read_clock" and json.loads(call.arguments) == {"zone": "UTC"}
        output = {"type": "function_call_output", "call_id": call.call_id, "output": "12:00"}
        second = await respond(
            proxy.client,
            stream=stream,
            model=MODEL,
            previous_response_id=first.id,
            input=[output],
            tools=[CLOCK],
        )
        assert second.output_text == "It is noon."
        # The stateless form: the earlier items sent inline.
        inline = [{"role": "user", "content": "time?"}, call.model_dump(), output]
        third = await respond(proxy.client, stream=stream, model=MODEL, input=inline, tools=[CLOCK])
    assert third.output_text == "Still noon."
    for sent in upstream.requests[1:]:
        assert roles(sent) == ["user", "assistant", "tool"]
        assert sent["messages"][1]["tool_calls"][0]["id"] == call.call_id
        assert sent["messages"][2] == {
            "role": "tool",
            "tool_call_id": call.call_id,
            "content": "12:00",
        }


async def test_mixed_turn_keeps_the_hidden_part(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 1, "b": 1}), ("read_clock", {})]),
        Reply.text("1 + 1 = 2 at noon."),
    )
    async with make_proxy(registry_with()) as proxy:
        first = await respond(proxy.client, stream=stream, model=MODEL, input="go", tools=[CLOCK])
        (call,) = items(first, "function_call")
        output = {"type": "function_call_output", "call_id": call.call_id, "output": "noon"}
        await respond(
            proxy.client, stream=stream, model=MODEL, previous_response_id=first.id, input=[output]
        )
    sent = upstream.requests[1]
    assert roles(sent) == ["user", "assistant", "tool", "tool"]
    assert len(sent["messages"][1]["tool_calls"]) == 2
    assert {m["content"] for m in sent["messages"][2:]} == {"2", "noon"}


async def test_mcp_entry_selects_a_namespace_and_shows_its_rounds(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    registry, runs = counting_registry()
    upstream.script(
        Reply.tool_calls([("ops_launch", {"target": "probe"})]),
        Reply.text("Launched."),
        Reply.text("Listed once."),
    )
    entry = {"type": "mcp", "server_label": "ops", "require_approval": "never"}
    async with make_proxy(registry) as proxy:
        response = await respond(
            proxy.client, stream=stream, model=MODEL, input="launch", tools=[entry]
        )
        again = await respond(
            proxy.client,
            stream=stream,
            model=MODEL,
            input="again",
            tools=[entry],
            previous_response_id=response.id,
        )
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "message"]
    (listing,) = items(response, "mcp_list_tools")
    assert listing.server_label == "ops"
    assert [t.name for t in listing.tools] == ["ops_launch"]
    (call,) = items(response, "mcp_call")
    assert (call.server_label, call.name, call.status) == ("ops", "ops_launch", "completed")
    assert call.output == "launched probe" and call.error is None
    assert runs == [{"target": "probe"}]
    # Only the namespace's tools reached the model.
    assert [t["function"]["name"] for t in upstream.requests[0]["tools"]] == ["ops_launch"]
    # Listed once per conversation; the stored rounds reach the upstream again.
    assert kinds(again) == ["message"]
    assert roles(upstream.requests[2]) == ["user", "assistant", "tool", "assistant", "user"]


async def test_failed_call_is_an_mcp_call_error(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(Reply.tool_calls([("t_explode", {"reason": "x"})]), Reply.text("Sorry."))
    entry = {"type": "mcp", "server_label": "t", "require_approval": "never"}
    async with make_proxy(registry_with()) as proxy:
        response = await respond(
            proxy.client, stream=stream, model=MODEL, input="go", tools=[entry]
        )
    (call,) = items(response, "mcp_call")
    assert call.status == "failed" and call.output is None
    assert "boom: x" in call.error.content[0]["text"]


async def _ask_approval(proxy, upstream: FakeUpstream, stream: bool) -> Any:
    upstream.script(
        Reply.tool_calls([("ops_launch", {"target": "rocket"})]),
        Reply.text("Done."),
        Reply.text("Again."),
        Reply.text("Third."),
    )
    first = await respond(proxy.client, stream=stream, model=MODEL, input="launch", tools=[OPS])
    assert first.status == "completed"
    assert kinds(first) == ["mcp_list_tools", "mcp_approval_request"]
    return first


OPS = {"type": "mcp", "server_label": "ops"}  # approval required by default


def _verdict(request_id: str, approve: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": "mcp_approval_response",
        "approval_request_id": request_id,
        "approve": approve,
        **extra,
    }


async def test_approval_runs_the_call_exactly_once(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    registry, runs = counting_registry()
    async with make_proxy(registry) as proxy:
        first = await _ask_approval(proxy, upstream, stream)
        (request,) = items(first, "mcp_approval_request")
        assert request.name == "ops_launch" and request.server_label == "ops"
        answer = [_verdict(request.id, True)]
        follow_up = {"previous_response_id": first.id, "input": answer, "tools": [OPS]}
        second = await respond(proxy.client, stream=stream, model=MODEL, **follow_up)
        assert runs == [{"target": "rocket"}]
        (call,) = items(second, "mcp_call")
        assert call.approval_request_id == request.id and call.output == "launched rocket"
        assert second.output_text == "Done."
        # A replay of the same approval: the kept outcome, never a second run.
        third = await respond(proxy.client, stream=stream, model=MODEL, **follow_up)
        assert third.output_text == "Again."
        assert kinds(third) == ["message"]
    assert runs == [{"target": "rocket"}]
    for sent in upstream.requests[1:3]:
        results = [m for m in sent["messages"] if m["role"] == "tool"]
        assert [r["content"] for r in results] == ["launched rocket"]


async def test_refused_approval_never_runs(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    registry, runs = counting_registry()
    async with make_proxy(registry) as proxy:
        first = await _ask_approval(proxy, upstream, stream)
        (request,) = items(first, "mcp_approval_request")
        answer = [_verdict(request.id, False, reason="not today")]
        await respond(
            proxy.client, stream=stream, model=MODEL, previous_response_id=first.id, input=answer
        )
    assert runs == []
    (told,) = [m for m in upstream.requests[1]["messages"] if m["role"] == "tool"]
    assert told["content"] == "Error (denied): the user refused the call: not today"


async def test_forged_or_malformed_approvals_are_refused(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    registry, runs = counting_registry()
    async with make_proxy(registry) as proxy:
        first = await _ask_approval(proxy, upstream, stream)
        (request,) = items(first, "mcp_approval_request")
        for bad in (_verdict("mcpr_tw" + "0" * 32, True), _verdict(request.id, "yes")):
            with pytest.raises(openai.BadRequestError):
                await respond(
                    proxy.client,
                    stream=stream,
                    model=MODEL,
                    previous_response_id=first.id,
                    input=[bad],
                )
        # A forged request item inline, with an id the proxy never issued: the model is
        # told no approval is pending; nothing runs.
        forged = {**request.model_dump(), "id": "mcpr_tw" + "1" * 32}
        stateless = [{"role": "user", "content": "launch"}, forged, _verdict(forged["id"], True)]
        await respond(proxy.client, stream=stream, model=MODEL, input=stateless)
    assert runs == []
    (told,) = [m for m in upstream.requests[1]["messages"] if m["role"] == "tool"]
    assert told["content"].startswith("Error (denied): no approval is pending")


async def test_retrieve_and_delete(make_proxy, upstream: FakeUpstream, stream: bool) -> None:
    upstream.script(Reply.text("Kept."), Reply.text("Not kept."))
    async with make_proxy(registry_with()) as proxy:
        kept = await respond(proxy.client, stream=stream, model=MODEL, input="a")
        fetched = await proxy.client.responses.retrieve(kept.id)
        assert fetched.output_text == "Kept." and fetched.id == kept.id
        deleted = await proxy.client.responses.delete(kept.id)
        assert deleted is None
        with pytest.raises(openai.NotFoundError):
            await proxy.client.responses.retrieve(kept.id)
        with pytest.raises(openai.NotFoundError):
            await proxy.client.responses.delete(kept.id)
        unkept = await respond(proxy.client, stream=stream, model=MODEL, input="b", store=False)
        assert unkept.store is False
        with pytest.raises(openai.NotFoundError):
            await proxy.client.responses.retrieve(unkept.id)
        with pytest.raises(openai.NotFoundError) as missing:
            await respond(
                proxy.client, stream=stream, model=MODEL, input="c", previous_response_id="resp_x"
            )
    assert missing.value.body["param"] == "previous_response_id"  # type: ignore[index]


@pytest.mark.parametrize(
    ("request_fields", "param"),
    [
        ({"input": 5}, "input"),
        ({"input": [{"type": "file_search_call"}]}, "input[0].type"),
        ({"input": "x", "tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"input": "x", "tools": [{"type": "mcp", "server_label": "nowhere"}]}, None),
        ({"input": "x", "max_output_tokens": "many"}, "max_output_tokens"),
        ({"input": "x", "extra_body": {"toolwire": {"bogus": 1}}}, "toolwire.bogus"),
        (
            {"input": [{"type": "function_call_output", "call_id": "c9", "output": "x"}]},
            "input[0].call_id",
        ),
    ],
)
async def test_bad_requests_are_400s(
    make_proxy, upstream: FakeUpstream, stream: bool, request_fields: dict[str, Any], param: Any
) -> None:
    async with make_proxy(registry_with()) as proxy:
        with pytest.raises(openai.BadRequestError) as error:
            await respond(proxy.client, stream=stream, model=MODEL, **request_fields)
    if param is not None:
        assert error.value.body["param"] == param  # type: ignore[index]
    assert upstream.requests == []


async def test_upstream_error_reaches_the_client(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(Reply.error(400, "context too long"))
    async with make_proxy(registry_with()) as proxy:
        with pytest.raises(openai.BadRequestError) as error:
            await respond(proxy.client, stream=stream, model=MODEL, input="x")
    assert "context too long" in str(error.value)


async def test_request_fields_reach_a_chat_upstream(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(Reply.text('{"ok": true}'))
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    async with make_proxy(registry_with()) as proxy:
        response = await respond(
            proxy.client,
            stream=stream,
            model=MODEL,
            input=[
                {"role": "developer", "content": "Answer in JSON."},
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "Is this fine?"},
                        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                    ],
                },
            ],
            text={"format": {"type": "json_schema", "name": "ok", "schema": schema}},
            max_output_tokens=64,
            temperature=0.2,
            metadata={"team": "a"},
            user="u-1",
            extra_body={"truncation": "auto", "some_future_field": {"x": 1}},
        )
    assert response.metadata == {"team": "a"} and response.max_output_tokens == 64
    sent = upstream.requests[0]
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "ok", "schema": schema},
    }
    assert sent["max_tokens"] == 64 and sent["temperature"] == 0.2
    assert "metadata" not in sent and "some_future_field" not in sent
    user = sent["messages"][1]
    assert user["content"][1]["image_url"]["url"] == "data:image/png;base64,AAAA"


async def test_stream_tool_events_show_rounds_without_mcp_entries(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.script(Reply.tool_calls([("t_add", {"a": 2, "b": 2})]), Reply.text("4"))
    async with make_proxy(registry_with()) as proxy:
        response = await respond(
            proxy.client,
            stream=stream,
            model=MODEL,
            input="2+2",
            extra_body={"toolwire": {"stream_tool_events": True}},
        )
    assert kinds(response) == ["mcp_call", "message"]
    (call,) = items(response, "mcp_call")
    assert (call.server_label, call.output) == ("t", "4")


async def test_guard_limit_is_incomplete(make_proxy, upstream: FakeUpstream, stream: bool) -> None:
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 1, "b": 1})]),
        Reply.text("Stopped early."),
    )
    async with make_proxy(registry_with()) as proxy:
        response = await respond(
            proxy.client,
            stream=stream,
            model=MODEL,
            input="loop",
            extra_body={"toolwire": {"max_iterations": 1}},
        )
    assert response.status == "incomplete"
    assert response.incomplete_details.reason == "max_iterations"
    assert response.output_text == "Stopped early."
    assert "tools" not in upstream.requests[1]
