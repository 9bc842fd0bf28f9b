"""A response's items of what its turn hands back to the client: the calls for it to run
(`function_call`, a search of its own), to approve (`mcp_approval_request`) or to answer (an
MCP server's question), and the programs that wait on them.

Functions of a `ResponseBuilder`: they add its items and number its events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry import ToolCall

from ...turn.events import Finished
from ..renderers import Event
from .calls import arguments_text, search_item, show_program, snapshot
from .items import Item, approval_id
from .questions import question_item
from .search import SEARCH_FUNCTION

if TYPE_CHECKING:
    from .builder import ResponseBuilder


def handed_back(builder: ResponseBuilder, done: Finished) -> list[Event]:
    """The items of what the turn hands back to the client: the programs it paused, and
    the calls for the client to run or approve, or the questions for it to answer."""
    events: list[Event] = []
    asked = {a.call.id: a for a in done.approvals}
    questions = {q["tool_call_id"] for q in done.questions}
    made_by: dict[str, str] = {}
    if builder.plan.tools.programmatic:
        for program in done.programs:
            made_by.update(dict.fromkeys(program.waits_on, program.call_id))
            shown = (
                program.call_id in builder.call_items
                or program.call_id in builder.plan.tools.programs_shown
            )
            if not shown:  # else shown when it started, here or in an earlier response
                events += show_program(builder, program)
    for call in done.tool_calls:
        if asked.get(call.id) is not None:
            events += _approval(builder, call)
        elif call.name == SEARCH_FUNCTION and builder.plan.tools.client_search:
            events += _client_search(builder, call)
        elif call.id in questions:
            events += _question(builder, question_item(call))
        else:
            events += _function_call(builder, call, made_by.get(call.id))
    return events


def _function_call(
    builder: ResponseBuilder, call: ToolCall, program: str | None = None
) -> list[Event]:
    arguments = arguments_text(call)
    item: Item = {
        "type": "function_call",
        "id": builder.new_id("fc"),
        "call_id": call.id,
        "name": call.name,
        "arguments": arguments,
        "status": "completed",
    }
    if program is not None:
        item["caller"] = {"type": "program", "caller_id": program}
    if call.name in builder.plan.tools.namespaced:
        item["namespace"], item["name"] = builder.plan.tools.namespaced[call.name]
    index = builder.add(item)
    added = {**item, "arguments": "", "status": "in_progress"}
    return [
        builder.event("response.output_item.added", output_index=index, item=added),
        builder.item_event("response.function_call_arguments.delta", index, delta=arguments),
        builder.item_event(
            "response.function_call_arguments.done",
            index,
            arguments=arguments,
            name=item["name"],
        ),
        builder.event("response.output_item.done", output_index=index, item=snapshot(item)),
    ]


def _client_search(builder: ResponseBuilder, call: ToolCall) -> list[Event]:
    """The model's call of the client's own search, for the client to run."""
    item = search_item(builder, call, "client", "completed")
    index = builder.add(item)
    return [
        builder.event("response.output_item.added", output_index=index, item=snapshot(item)),
        builder.event("response.output_item.done", output_index=index, item=snapshot(item)),
    ]


def _question(builder: ResponseBuilder, item: Item) -> list[Event]:
    """An MCP server's question for the client: done as soon as it is added."""
    index = builder.add(item)
    return [
        builder.event("response.output_item.added", output_index=index, item=snapshot(item)),
        builder.event("response.output_item.done", output_index=index, item=snapshot(item)),
    ]


def _approval(builder: ResponseBuilder, call: ToolCall) -> list[Event]:
    item: Item = {
        "type": "mcp_approval_request",
        "id": approval_id(call.id),
        "server_label": builder.plan.labels.get(call.name, "toolwire"),
        "name": call.name,
        "arguments": arguments_text(call),
    }
    index = builder.add(item)
    return [
        builder.event("response.output_item.added", output_index=index, item=item),
        builder.event("response.output_item.done", output_index=index, item=item),
    ]
