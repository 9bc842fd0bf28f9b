"""Answers `tool_search` calls: finds deferred tools and loads them into the turn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from registry import ToolCall, ToolResult

from . import client_tools
from .catalog import Toolset

DEFAULT_LIMIT = 5
MAX_LIMIT = 20


def run_search(
    toolset: Toolset,
    call: ToolCall,
    loaded: dict[str, dict[str, Any]],
    client: Sequence[dict[str, Any]] = (),
) -> ToolResult:
    """Search the toolset's deferred tools and the client's deferred ones (`client`, Chat
    tools); the found ones join `loaded` (wire name → Chat tool, as the loop injects it)."""
    deferred = toolset.deferred
    if deferred is None and not client:
        return ToolResult.error(call.id, "unknown_tool", "there are no tools to search")
    arguments = _arguments(call)
    query = arguments.get("query") if arguments is not None else None
    if not isinstance(query, str) or not query.strip():
        return ToolResult.error(
            call.id, "invalid_arguments", "query: a non-empty string is required"
        )
    limit = arguments.get("limit", DEFAULT_LIMIT) if arguments else DEFAULT_LIMIT
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        return ToolResult.error(
            call.id, "invalid_arguments", f"limit: an integer from 1 to {MAX_LIMIT} is required"
        )
    found = []
    for tool in deferred.search(query, limit=limit) if deferred is not None else ():
        name = deferred.wire_names.get(tool.qualified_name) if deferred is not None else None
        chat = toolset.deferred_chat_tools.get(name) if name is not None else None
        if name is None or chat is None:
            continue
        loaded[name] = chat
        found.append({"name": name, "description": tool.description})
    for chat in client_tools.search(client, query, limit - len(found)) if client else ():
        function = chat["function"]
        loaded[function["name"]] = chat
        found.append({"name": function["name"], "description": function.get("description", "")})
    if not found:
        return ToolResult(call.id, orjson.dumps({"tools": [], "note": "no tool matches"}).decode())
    note = "these tools can be called from now on"
    return ToolResult(call.id, orjson.dumps({"tools": found, "note": note}).decode())


def _arguments(call: ToolCall) -> dict[str, Any] | None:
    if isinstance(call.arguments, dict):
        return call.arguments
    try:
        value = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
