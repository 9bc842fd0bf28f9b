"""Responses API items on the way in: checked, and the hosted-MCP ones put in Chat terms.

The loop speaks Chat messages. Before llm-rosetta converts a conversation, the items it
does not know are translated here: an `mcp_call` the proxy ran becomes the function call
and output the upstream saw, an `mcp_approval_request` the call it paused, and an
`mcp_approval_response` the verdict the approval flow reads. A `program` item (programmatic
tool calling, answered by code mode) and its `program_output` are the proxy's own and are
left out, as is the `caller` of the calls a program made. A client-executed search's
`tool_search_call` and `tool_search_output` become the `find_tools` call and result the
upstream saw (a server-executed one is the proxy's own). A `web_search_call` (a hosted
web search answered by a registry tool) and a `code_interpreter_call` (a program code mode
ran) are the proxy's own too.
"""

from __future__ import annotations

from typing import Any

import orjson

from ...errors import BadRequestError
from . import questions, search
from .search import flat_name

Item = dict[str, Any]

APPROVAL_PREFIX = "mcpr_"
_PROXYS_OWN = frozenset(
    {
        "mcp_list_tools",
        "reasoning",
        "program",
        "program_output",
        "tool_search_call",
        "tool_search_output",
        "web_search_call",
        "code_interpreter_call",
    }
)
"""Items the conversation carries for the client's eyes only (the proxy keeps the turns
they stand for)."""
_CALL_PREFIX = "call_"

_KNOWN = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "program",
        "program_output",
        "tool_search_call",
        "tool_search_output",
        "web_search_call",
        "code_interpreter_call",
        questions.QUESTION_ITEM,
        questions.ANSWER_ITEM,
    }
)


def approval_id(call_id: str) -> str:
    """The `mcp_approval_request` id of a paused call (its proxy-issued call id, renamed)."""
    return APPROVAL_PREFIX + call_id.removeprefix(_CALL_PREFIX)


def call_id_of(approval_request_id: str) -> str:
    """The paused call an approval request id names."""
    return _CALL_PREFIX + approval_request_id.removeprefix(APPROVAL_PREFIX)


def input_items(raw: Any) -> list[Item]:
    """The request's `input` as a list of typed items.

    Raises:
        BadRequestError: `input` is neither a string nor a list of known items.
    """
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    if not isinstance(raw, list):
        raise BadRequestError("'input' must be a string or an array of items", param="input")
    items: list[Item] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise BadRequestError("each input item must be an object", param=f"input[{i}]")
        kind = item.get("type", "message" if "role" in item else None)
        if kind not in _KNOWN:
            raise BadRequestError(
                f"input items of type {kind!r} are not supported", param=f"input[{i}].type"
            )
        items.append(item if "type" in item else {**item, "type": kind})
    return items


def listed_labels(items: list[Item]) -> set[str]:
    """Server labels whose tools the conversation has already listed."""
    return {str(i.get("server_label")) for i in items if i.get("type") == "mcp_list_tools"}


def for_rosetta(items: list[Item]) -> list[Item]:
    """The conversation in items llm-rosetta converts to Chat messages.

    Raises:
        BadRequestError: an item is malformed, a verdict is not a verdict, or an output
            or approval answers a call the conversation never made.
    """
    if _messages_only(items):
        return list(items)  # as the loop below would leave them
    out: list[Item] = []
    called: set[str] = set()
    searched: list[str] = []
    """Client-executed searches not answered yet, in order."""
    for i, item in enumerate(questions.in_history(items)):
        where = f"input[{i}]"
        kind = item["type"]
        if search.is_client_search(item):
            out.append(_client_search(item, where, called, searched))
            continue
        if kind in _PROXYS_OWN or questions.unfinished(item):
            # Listings are informational, Chat upstreams take no reasoning items, and a
            # program is the proxy's own (its run_code call is in the kept turn), as is a
            # call still running when an MCP server's question paused its turn.
            continue
        item = _plain(item)
        if kind == "mcp_call":
            call_id = _text(item, "id", where)
            out.append(_function_call(call_id, item, where))
            out.append(_output(call_id, _mcp_output(item)))
            called.add(call_id)
        elif kind == "mcp_approval_request":
            call_id = call_id_of(_text(item, "id", where))
            out.append(_function_call(call_id, item, where))
            called.add(call_id)
        elif kind == "mcp_approval_response":
            call_id = call_id_of(_text(item, "approval_request_id", where))
            if call_id not in called:
                raise BadRequestError(
                    "mcp_approval_response answers no mcp_approval_request of this conversation",
                    param=f"{where}.approval_request_id",
                )
            out.append(_output(call_id, _verdict(item, where)))
        elif kind == "function_call":
            call_id = _text(item, "call_id", where)
            _text(item, "name", where)
            called.add(call_id)
            out.append(item)
        elif kind == "function_call_output":
            call_id = _text(item, "call_id", where)
            if call_id not in called:
                raise BadRequestError(
                    f"function_call_output answers call {call_id!r}, which no function_call "
                    "of this conversation made",
                    param=f"{where}.call_id",
                )
            out.append(item)
        else:
            out.append(item)
    return out


def _messages_only(items: list[Item]) -> bool:
    """Whether every item is a message (without a `caller`, which `_plain` would drop)."""
    for item in items:  # noqa: SIM110 (a loop: `all` would make a generator)
        if item["type"] != "message" or "caller" in item:
            return False
    return True


def _plain(item: Item) -> Item:
    """An item without what only the hosted API reads: the `caller` of a program's calls,
    and a namespace function's `namespace` (its call goes by the flat name the loop knows)."""
    if "caller" in item:
        item = {k: v for k, v in item.items() if k != "caller"}
    if item["type"] == "function_call" and isinstance(item.get("namespace"), str):
        flat = flat_name(item["namespace"], str(item.get("name")))
        item = {k: v for k, v in item.items() if k != "namespace"} | {"name": flat}
    return item


def _client_search(item: Item, where: str, called: set[str], searched: list[str]) -> Item:
    """A client-executed search's item as the function call or result the upstream saw (an
    output without `call_id` answers the latest search not answered yet).

    Raises:
        BadRequestError: an output answers no search of the conversation.
    """
    if item["type"] == "tool_search_call":
        call = search.as_call(item, where)
        called.add(call["call_id"])
        searched.append(call["call_id"])
        return call
    call_id = item.get("call_id") or (searched[-1] if searched else None)
    if not isinstance(call_id, str) or call_id not in called:
        raise BadRequestError(
            "tool_search_output answers no client-executed tool_search_call of this conversation",
            param=f"{where}.call_id",
        )
    if call_id in searched:
        searched.remove(call_id)
    return search.as_output(item, call_id)


def _text(item: Item, key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequestError(f"'{key}' must be a non-empty string", param=f"{where}.{key}")
    return value


def _function_call(call_id: str, item: Item, where: str) -> Item:
    arguments = item.get("arguments", "{}")
    if not isinstance(arguments, str):
        raise BadRequestError("'arguments' must be a JSON string", param=f"{where}.arguments")
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": _text(item, "name", where),
        "arguments": arguments,
    }


def _output(call_id: str, output: str) -> Item:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def _mcp_output(item: Item) -> str:
    # A failed call goes back as the model saw it ("Error (kind): ..."), not re-wrapped.
    error = item.get("error")
    if error:
        if isinstance(error, dict):
            error = (
                error.get("message")
                or _texts(error.get("content"))
                or orjson.dumps(error.get("content", error)).decode()
            )
        error = str(error)
        return error if error.startswith("Error") else f"Error: {error}"
    output = item.get("output")
    return output if isinstance(output, str) else ""


def _texts(content: Any) -> str:
    parts = content if isinstance(content, list) else []
    return "".join(
        p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


def _verdict(item: Item, where: str) -> str:
    """The approval flow's verdict text; anything but a boolean `approve` is refused."""
    approve = item.get("approve")
    if not isinstance(approve, bool):
        raise BadRequestError("'approve' must be true or false", param=f"{where}.approve")
    verdict: dict[str, Any] = {"approve": approve}
    reason = item.get("reason")
    if isinstance(reason, str) and reason:
        verdict["reason"] = reason
    return orjson.dumps(verdict).decode()
