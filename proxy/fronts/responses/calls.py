"""A response's items of the tool calls its turn runs and shows: an `mcp_call` for a registry
tool, and the items of the hosted tools Toolwire answers (`web_search_call`,
`code_interpreter_call`, `tool_search_call` and its output, `program` and its output).

Functions of a `ResponseBuilder`: they add its items and number its events; its `call_items`
says where each shown call's item is until its result comes.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import orjson

from registry import ToolCall, ToolResult

from ...turn.catalog import SEARCH_TOOL
from ...turn.events import ProgramCall, ToolProgress
from ...turn.programs import RUN_CODE
from ..hosted import sources
from ..renderers import Event
from .items import Item, approval_id
from .texts import close_text

if TYPE_CHECKING:
    from .builder import ResponseBuilder


def _shown(builder: ResponseBuilder, call: ToolCall) -> bool:
    if call.name == SEARCH_TOOL and builder.plan.tools.tool_search:
        return True
    if _searches_web(builder, call):
        return True
    if call.name == RUN_CODE and (
        builder.plan.tools.programmatic or builder.plan.tools.code_interpreter
    ):
        return True
    return builder.plan.show_rounds


def call_progress(builder: ResponseBuilder, event: ToolProgress) -> list[Event]:
    """A shown call's progress, as Toolwire's own `toolwire.progress` event on its
    `mcp_call` item (OpenAI has no progress event; SDKs pass unknown types through)."""
    index = builder.call_items.get(event.call_id)
    if index is None:
        return []
    return [builder.item_event("toolwire.progress", index, progress=event.as_dict())]


def calls_started(builder: ResponseBuilder, calls: tuple[ToolCall, ...]) -> list[Event]:
    """The items of the calls a tool round starts that the client is shown, running."""
    calls = tuple(call for call in calls if _shown(builder, call))
    events = close_text(builder) if calls else []
    for call in calls:
        if call.name == SEARCH_TOOL and builder.plan.tools.tool_search:
            events += _search_started(builder, call)
            continue
        if _searches_web(builder, call):
            events += _web_search_started(builder, call)
            continue
        if call.name == RUN_CODE and builder.plan.tools.programmatic:
            arguments = arguments_json(call)
            code = arguments.get("code", "") if isinstance(arguments, dict) else ""
            events += show_program(builder, ProgramCall(call.id, str(code), ()))
            continue
        if call.name == RUN_CODE and builder.plan.tools.code_interpreter:
            events += _interpreter_started(builder, call)
            continue
        arguments = arguments_text(call)
        item: Item = {
            "type": "mcp_call",
            "id": builder.new_id("mcp"),
            "server_label": builder.plan.labels.get(call.name, "toolwire"),
            "name": call.name,
            "arguments": arguments,
            "output": None,
            "error": None,
            "status": "in_progress",
            "approval_request_id": approval_id(call.id) if _paused(call) else None,
        }
        index = builder.add(item)
        builder.call_items[call.id] = index
        added = {**item, "arguments": ""}
        events += [
            builder.event("response.output_item.added", output_index=index, item=added),
            builder.item_event("response.mcp_call.in_progress", index),
            builder.item_event("response.mcp_call_arguments.delta", index, delta=arguments),
            builder.item_event("response.mcp_call_arguments.done", index, arguments=arguments),
        ]
    return events


def calls_finished(
    builder: ResponseBuilder, calls: tuple[ToolCall, ...], results: tuple[ToolResult, ...]
) -> list[Event]:
    """The shown calls' items done, with their results."""
    events: list[Event] = []
    for call, result in zip(calls, results, strict=True):
        index = builder.call_items.pop(call.id, None)
        if index is None:
            if call.name == RUN_CODE and builder.plan.tools.programmatic:
                # A program paused in an earlier response, resumed and finished now.
                events += _program_output(builder, call, result)
            elif call.name == RUN_CODE and builder.plan.tools.code_interpreter:
                events += _interpreter_started(builder, call, resumed=True)
                events += _interpreter_finished(builder, builder.call_items.pop(call.id), result)
            continue
        item = builder.output[index]
        if item["type"] == "tool_search_call":
            events += _search_finished(builder, index, call, result)
            continue
        if item["type"] == "program":
            events += _program_output(builder, call, result)
            continue
        if item["type"] == "web_search_call":
            events += _web_search_finished(builder, index, result)
            continue
        if item["type"] == "code_interpreter_call":
            events += _interpreter_finished(builder, index, result)
            continue
        if result.is_error:
            item["error"] = {
                "type": "mcp_tool_execution_error",
                "content": [{"type": "text", "text": result.content}],
            }
            item["status"] = "failed"
            events.append(builder.item_event("response.mcp_call.failed", index))
        else:
            item["output"] = result.content
            item["status"] = "completed"
            events.append(builder.item_event("response.mcp_call.completed", index))
        events.append(
            builder.event("response.output_item.done", output_index=index, item=snapshot(item))
        )
    return events


def _searches_web(builder: ResponseBuilder, call: ToolCall) -> bool:
    search = builder.plan.web_search
    return search is not None and call.name == search.wire_name


def _web_search_started(builder: ResponseBuilder, call: ToolCall) -> list[Event]:
    """A web search as the hosted one shows: its item, searching."""
    assert builder.plan.web_search is not None
    query = builder.plan.web_search.asked(call.arguments)
    item: Item = {
        "type": "web_search_call",
        "id": builder.new_id("ws"),
        "status": "in_progress",
        "action": {"type": "search", "query": query},
    }
    index = builder.add(item)
    builder.call_items[call.id] = index
    return [
        builder.event("response.output_item.added", output_index=index, item=snapshot(item)),
        builder.item_event("response.web_search_call.in_progress", index),
        builder.item_event("response.web_search_call.searching", index),
    ]


def _web_search_finished(builder: ResponseBuilder, index: int, result: ToolResult) -> list[Event]:
    """The search done: the sources it found (a failed search has none)."""
    item = builder.output[index]
    found = sources(result)
    builder.sources += found
    item["action"] = {
        **item["action"],
        "sources": [{"type": "url", "url": s.url} for s in found],
    }
    return _hosted_done(builder, index, result, "response.web_search_call.completed")


def _interpreter_started(
    builder: ResponseBuilder, call: ToolCall, *, resumed: bool = False
) -> list[Event]:
    """A program as the hosted code interpreter shows one: its code, interpreting (one
    resumed after a pause shows without its code: its item was in the earlier
    response)."""
    arguments = arguments_json(call)
    code = arguments.get("code") if isinstance(arguments, dict) else None
    code = None if resumed or not isinstance(code, str) else code
    item: Item = {
        "type": "code_interpreter_call",
        "id": builder.new_id("ci"),
        "code": code,
        "container_id": f"cntr_{builder.plan.id[5:29]}",
        "outputs": None,
        "status": "in_progress",
    }
    index = builder.add(item)
    builder.call_items[call.id] = index
    events = [
        builder.event("response.output_item.added", output_index=index, item=snapshot(item)),
        builder.item_event("response.code_interpreter_call.in_progress", index),
    ]
    if code is not None:
        events += [
            builder.item_event("response.code_interpreter_call_code.delta", index, delta=code),
            builder.item_event("response.code_interpreter_call_code.done", index, code=code),
        ]
    events.append(builder.item_event("response.code_interpreter_call.interpreting", index))
    return events


def _interpreter_finished(builder: ResponseBuilder, index: int, result: ToolResult) -> list[Event]:
    """The program done: what it printed (or the error that stopped it) as its logs."""
    item = builder.output[index]
    item["outputs"] = [{"type": "logs", "logs": result.content}]
    return _hosted_done(builder, index, result, "response.code_interpreter_call.completed")


def _hosted_done(
    builder: ResponseBuilder, index: int, result: ToolResult, completed: str
) -> list[Event]:
    """A hosted tool's call at its end: its status, its `completed` event (a failed one has
    none), and its item done."""
    item = builder.output[index]
    item["status"] = "failed" if result.is_error else "completed"
    events = []
    if not result.is_error:
        events.append(builder.item_event(completed, index))
    events.append(
        builder.event("response.output_item.done", output_index=index, item=snapshot(item))
    )
    return events


def search_item(builder: ResponseBuilder, call: ToolCall, execution: str, status: str) -> Item:
    """The `tool_search_call` item of a search the proxy runs (`server`) or the client
    does (`client`)."""
    return {
        "type": "tool_search_call",
        "id": builder.new_id("tsc"),
        "call_id": call.id,
        "arguments": arguments_json(call),
        "execution": execution,
        "status": status,
    }


def _search_started(builder: ResponseBuilder, call: ToolCall) -> list[Event]:
    item = search_item(builder, call, "server", "in_progress")
    index = builder.add(item)
    builder.call_items[call.id] = index
    return [builder.event("response.output_item.added", output_index=index, item=snapshot(item))]


def _search_finished(
    builder: ResponseBuilder, index: int, call: ToolCall, result: ToolResult
) -> list[Event]:
    """The search's call item done, and its output: the tools it loaded."""
    item = builder.output[index]
    item["status"] = "incomplete" if result.is_error else "completed"
    found = _found(result) if not result.is_error else []
    output: Item = {
        "type": "tool_search_output",
        "id": builder.new_id("tso"),
        "call_id": call.id,
        "execution": "server",
        "status": item["status"],
        "tools": _output_tools(builder, found),
    }
    added = builder.add(output)
    return [
        builder.event("response.output_item.done", output_index=index, item=snapshot(item)),
        builder.event("response.output_item.added", output_index=added, item=snapshot(output)),
        builder.event("response.output_item.done", output_index=added, item=snapshot(output)),
    ]


def _output_tools(builder: ResponseBuilder, found: list[dict[str, Any]]) -> list[Item]:
    """The tools a search found as its output lists them: a namespace's functions in
    their namespace, by their own names."""
    tools: list[Item] = []
    spaces: dict[str, Item] = {}
    for tool in found:
        where = builder.plan.tools.namespaced.get(tool["name"])
        if where is None:
            tools.append({"type": "function", **tool})
            continue
        namespace, name = where
        space = spaces.get(namespace)
        if space is None:
            description = builder.plan.tools.namespace_descriptions.get(namespace, "")
            space = {"type": "namespace", "name": namespace, "description": description}
            space["tools"] = []
            spaces[namespace] = space
            tools.append(space)
        space["tools"].append({**tool, "type": "function", "name": name})
    return tools


def show_program(builder: ResponseBuilder, program: ProgramCall) -> list[Event]:
    """A program's item (programmatic tool calling): its code, shown once."""
    fingerprint = hashlib.sha256(program.code.encode()).hexdigest()[:32]
    item: Item = {
        "type": "program",
        "id": builder.new_id("prog"),
        "call_id": program.call_id,
        "code": program.code,
        "fingerprint": fingerprint,
    }
    index = builder.add(item)
    builder.call_items[program.call_id] = index
    return [
        builder.event("response.output_item.added", output_index=index, item=item),
        builder.event("response.output_item.done", output_index=index, item=item),
    ]


def _program_output(builder: ResponseBuilder, call: ToolCall, result: ToolResult) -> list[Event]:
    """A finished program's result, what its output was to the model."""
    item: Item = {
        "type": "program_output",
        "id": builder.new_id("progo"),
        "call_id": call.id,
        "result": result.content,
        "status": "incomplete" if result.is_error else "completed",
    }
    index = builder.add(item)
    return [
        builder.event("response.output_item.added", output_index=index, item=item),
        builder.event("response.output_item.done", output_index=index, item=item),
    ]


def arguments_text(call: ToolCall) -> str:
    """A call's arguments as the JSON text an item carries."""
    arguments = call.arguments
    return arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()


def arguments_json(call: ToolCall) -> Any:
    """A call's arguments parsed (`{}` when their text is no JSON)."""
    arguments = call.arguments
    if isinstance(arguments, str):
        try:
            return orjson.loads(arguments or "{}")
        except orjson.JSONDecodeError:
            return {}
    return arguments


def _found(result: ToolResult) -> list[dict[str, Any]]:
    """The tools a `tool_search` result names (its `name` and `description` each)."""
    try:
        tools = orjson.loads(result.content).get("tools")
    except (orjson.JSONDecodeError, AttributeError):
        return []
    return [
        {"name": t["name"], "description": t.get("description", "")}
        for t in tools or ()
        if isinstance(t, dict) and isinstance(t.get("name"), str)
    ]


def _paused(call: ToolCall) -> bool:
    """Whether a call ran after an approval (its id is one the proxy issued to pause it)."""
    return call.id.startswith("call_tw")


def snapshot(item: Item) -> Item:
    """An item as an event shows it now (the builder goes on filling it in)."""
    return {**item, "content": list(item["content"])} if "content" in item else dict(item)
