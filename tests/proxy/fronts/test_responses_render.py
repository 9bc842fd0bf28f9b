"""The Responses builder: loop events in, Responses stream events and the final object out."""

from __future__ import annotations

from typing import Any

import orjson

from proxy.errors import UpstreamError
from proxy.fronts.responses.builder import STORED, ResponseBuilder
from proxy.fronts.responses.plan import ResponsePlan
from proxy.turn.events import (
    ApprovalRequest,
    ContentDelta,
    Finished,
    ToolsFinished,
    ToolsStarted,
    Usage,
)
from registry import ToolCall, ToolResult

USAGE = Usage(7, 3, 10, cached_tokens=2, reasoning_tokens=1)


def builder(*, show_rounds: bool = False, listings: tuple[dict[str, Any], ...] = ()) -> Any:
    plan = ResponsePlan(
        model="m",
        echo={"store": True},
        labels={"t_add": "t"},
        show_rounds=show_rounds,
        listings=listings,
    )
    return ResponseBuilder(plan)


def run(b: ResponseBuilder, *events: Any) -> list[dict[str, Any]]:
    out = b.start()
    for event in events:
        out += b.feed(event)
    return out


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_reasoning_then_text_make_two_items_in_order() -> None:
    b = builder()
    events = run(
        b,
        ContentDelta(reasoning="Let me "),
        ContentDelta(reasoning="think."),
        ContentDelta(content="Hello"),
        ContentDelta(content=" world"),
        Finished("stop", USAGE),
    )
    assert types(events) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.reasoning_text.delta",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    final = events[-1]["response"]
    reasoning, message = final["output"]
    assert reasoning["type"] == "reasoning"
    assert reasoning["content"] == [{"type": "reasoning_text", "text": "Let me think."}]
    assert message["content"][0]["text"] == "Hello world"
    assert message["content"][0]["logprobs"] == []
    assert final["usage"] == {
        "input_tokens": 7,
        "input_tokens_details": {"cached_tokens": 2},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 1},
        "total_tokens": 10,
    }
    assert final["status"] == "completed" and isinstance(final["completed_at"], int)
    assert all(e["output_index"] == 1 for e in events[9:16])


def test_hidden_rounds_make_no_items() -> None:
    call = ToolCall("call_1", "t_add", '{"a": 1}')
    b = builder()
    events = run(
        b,
        ToolsStarted((call,)),
        ToolsFinished((call,), (ToolResult("call_1", "2"),)),
        ContentDelta(content="2"),
        Finished("stop", USAGE),
    )
    assert [i["type"] for i in events[-1]["response"]["output"]] == ["message"]


def test_shown_rounds_are_mcp_calls_text_before_them_its_own_message() -> None:
    ok = ToolCall("call_1", "t_add", '{"a": 1}')
    bad = ToolCall("call_2", "t_add", "{}")
    b = builder(show_rounds=True)
    events = run(
        b,
        ContentDelta(content="Adding."),
        ToolsStarted((ok, bad)),
        ToolsFinished(
            (ok, bad),
            (ToolResult("call_1", "2"), ToolResult.error("call_2", "invalid_arguments", "a")),
        ),
        Finished("stop", USAGE),
    )
    output = events[-1]["response"]["output"]
    assert [i["type"] for i in output] == ["message", "mcp_call", "mcp_call"]
    assert output[1] | {"id": ""} == {
        "type": "mcp_call",
        "id": "",
        "server_label": "t",
        "name": "t_add",
        "arguments": '{"a": 1}',
        "output": "2",
        "error": None,
        "status": "completed",
        "approval_request_id": None,
    }
    assert output[2]["status"] == "failed" and output[2]["output"] is None
    assert output[2]["error"]["type"] == "mcp_tool_execution_error"
    assert "response.mcp_call.failed" in types(events)
    assert types(events).count("response.mcp_call_arguments.done") == 2


def test_hand_back_orders_function_calls_and_approval_requests() -> None:
    mine = ToolCall("call_1", "read_clock", "{}")
    paused = ToolCall("call_twabc", "t_add", '{"a": 1}')
    approval = ApprovalRequest(paused, "t.add", "goes online", 0)
    b = builder()
    events = run(b, Finished("tool_calls", USAGE, (mine, paused), approvals=(approval,)))
    output = events[-1]["response"]["output"]
    assert [i["type"] for i in output] == ["function_call", "mcp_approval_request"]
    assert output[0]["call_id"] == "call_1"
    assert output[1]["id"] == "mcpr_twabc" and output[1]["server_label"] == "t"
    assert events[-1]["type"] == "response.completed"


def test_guard_and_length_end_incomplete() -> None:
    stopped = run(builder(), Finished("stop", USAGE, stopped_by="max_iterations"))[-1]
    assert stopped["type"] == "response.incomplete"
    assert stopped["response"]["incomplete_details"] == {"reason": "max_iterations"}
    cut = run(builder(), ContentDelta(content="abc"), Finished("length", USAGE))[-1]
    assert cut["response"]["status"] == "incomplete"
    assert cut["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_failure_closes_open_items_and_ends_failed() -> None:
    b = builder()
    events = run(b, ContentDelta(content="part"))
    events += b.fail(UpstreamError("upstream went away"))
    assert types(events)[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.failed",
    ]
    failed = events[-1]["response"]
    assert failed["status"] == "failed"
    assert events[-2]["item"]["status"] == "incomplete"  # the cut message is not complete
    assert failed["output"][0]["status"] == "incomplete"
    assert failed["error"] == {"code": "upstream_error", "message": "upstream went away"}


def test_listings_open_the_output() -> None:
    listing = {"type": "mcp_list_tools", "id": "mcpl_0", "server_label": "t", "tools": []}
    events = run(builder(listings=(listing,)), Finished("stop", USAGE))
    assert types(events)[2:6] == [
        "response.output_item.added",
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.output_item.done",
    ]
    assert events[-1]["response"]["output"] == [listing]


def test_a_stored_end_passes_on_the_events_that_finished_the_response() -> None:
    b = builder()
    b.keeps = True
    last = run(b, ContentDelta(content="Hi"))[-1]["sequence_number"]
    assert b.final() is None
    assert b.feed(Finished("stop", USAGE)) == []  # its end waits for the response stored
    stored = b.final()
    assert stored is not None and stored["status"] == "completed"
    closing = b.feed(STORED)  # nothing folded twice, nothing renumbered
    assert [e["sequence_number"] for e in closing] == list(range(last + 1, last + 5))
    assert closing[-1]["type"] == "response.completed"
    assert orjson.loads(orjson.dumps(closing[-1]["response"]))["output"] == stored["output"]


def _frames(renderer: Any, *events: Any) -> bytes:
    out = renderer.start()
    for event in events:
        out += b"".join(renderer.frames(event))
    return out


def test_the_response_stream_sends_the_frames_the_builder_stream_sends() -> None:
    # The opening's response object is serialized once for both its events: the same bytes.
    from proxy.fronts.renderers import BuilderStream
    from proxy.fronts.responses.render import ResponseStream

    listing = {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "t", "tools": []}
    for listings in ((), (listing,)):
        plan = ResponsePlan(
            model="m",
            echo={"store": True, "instructions": 'say "hi" ü'},
            labels={},
            show_rounds=False,
            listings=listings,
        )
        turn = (ContentDelta(content="Hi"), ContentDelta(content=" you"), Finished("stop", USAGE))
        ours = _frames(ResponseStream(ResponseBuilder(plan)), *turn)
        theirs = _frames(BuilderStream(ResponseBuilder(plan)), *turn)
        assert ours == theirs
        assert ours.count(b'"sequence_number":') == len(run(builder(listings=listings), *turn))
