"""The hosted web search's and fetch's blocks of earlier turns, put back in the model's terms.

A client sends an assistant turn back as it came: its `server_tool_use` blocks (the
searches, the fetches) and their `web_search_tool_result` / `web_fetch_tool_result` blocks
sit in the assistant message itself. For the model they were calls of the registry tool
answering the hosted one and that tool's results: each call becomes that tool's `tool_use`
block, and its result a `tool_result` in a user message of its own, the assistant message
split around them. Calls without a result (and the blocks of other server tools) are left
for `client_marks` to take out.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..hosted import WEB_FETCH, HostedTool

Message = dict[str, Any]
Block = dict[str, Any]


def replay_searches(document: dict[str, Any], search: HostedTool) -> dict[str, Any]:
    """The request with each answered search of its history as the call and result the
    model saw; a request with none is returned as it is."""
    messages = document.get("messages") or []
    replayed: list[Message] = []
    changed = False
    for message in messages:
        split = _split(message, search)
        changed = changed or split is not None
        replayed += split if split is not None else [message]
    return {**document, "messages": replayed} if changed else document


def _split(message: Any, search: HostedTool) -> list[Message] | None:
    """An assistant message holding answered searches, split around their results; None
    when it holds none."""
    content = message.get("content") if isinstance(message, dict) else None
    if message.get("role") != "assistant" or not isinstance(content, list):
        return None
    kind = f"{search.hosted}_tool_result"
    results = {
        b.get("tool_use_id"): b for b in content if isinstance(b, dict) and b.get("type") == kind
    }
    searches = {
        b.get("id")
        for b in content
        if isinstance(b, dict)
        and b.get("type") == "server_tool_use"
        and b.get("name") == search.name
        and b.get("id") in results
    }
    if not searches:
        return None
    out: list[Message] = []
    said: list[Block] = []
    for block in content:
        if isinstance(block, dict) and block.get("id") in searches:
            said.append(_call(block, search))
        elif isinstance(block, dict) and block.get("tool_use_id") in searches:
            if not said and (not out or out[-1]["role"] != "user"):
                continue  # a result before its search: nothing it could answer
            if said:
                out.append({"role": "assistant", "content": said})
                out.append({"role": "user", "content": []})
                said = []
            out[-1]["content"].append(_result(block, search))
        else:
            said.append(block)
    if said:
        out.append({"role": "assistant", "content": said})
    return out


def _call(block: Block, search: HostedTool) -> Block:
    given = block.get("input")
    asked = given.get(search.input_key) if isinstance(given, dict) else None
    arguments = {search.argument: asked if isinstance(asked, str) else ""}
    return {"type": "tool_use", "id": block["id"], "name": search.wire_name, "input": arguments}


def _result(block: Block, search: HostedTool) -> Block:
    content = block.get("content")
    answer: Block = {"type": "tool_result", "tool_use_id": block["tool_use_id"]}
    if search.hosted == WEB_FETCH and isinstance(content, dict):
        if content.get("type") == "web_fetch_result":
            document = content.get("content")
            source = document.get("source") if isinstance(document, dict) else None
            data = source.get("data") if isinstance(source, dict) else None
            return {**answer, "content": data if isinstance(data, str) else ""}
    elif isinstance(content, list):
        found = [
            {
                "url": r.get("url"),
                "title": r.get("title"),
                "snippet": r.get("encrypted_content"),
            }
            for r in content
            if isinstance(r, dict) and r.get("type") == "web_search_result"
        ]
        return {**answer, "content": orjson.dumps(found).decode()}
    code = content.get("error_code") if isinstance(content, dict) else None
    return {**answer, "content": f"Error: {code or 'unavailable'}", "is_error": True}
