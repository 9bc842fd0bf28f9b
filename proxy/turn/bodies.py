"""The upstream requests' bodies a turn sends, and the messages it adds to them: the client's
body without its messages and tools (the base every request of the turn shares), a request made
of it with the turn's messages and tools, the client's history without Toolwire's fields, and a
round's results as tool messages.
"""

from __future__ import annotations

from typing import Any

from registry import ToolResult

Message = dict[str, Any]


def upstream_request(
    base: dict[str, Any], messages: list[Message], tools: list[dict[str, Any]]
) -> dict[str, Any]:
    """An upstream request's body: `base` (`upstream_body`'s) with `messages` and `tools`
    (without them, no tool choice either)."""
    return _with_tools({**base, "messages": messages}, tools)


def first_request(
    client_body: dict[str, Any], messages: list[Message], tools: list[dict[str, Any]]
) -> dict[str, Any]:
    """`upstream_request(upstream_body(client_body), messages, tools)`, the same keys in the same
    order, with one copy of the body rather than two: the first upstream request of a turn
    that `relay` asks, whose base is made only if the turn goes on."""
    body = upstream_body(client_body)
    body["messages"] = messages
    return _with_tools(body, tools)


def _with_tools(body: dict[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """`body` with `tools`, or without them and without a tool choice when there are none."""
    if tools:
        body["tools"] = tools
    else:
        body.pop("tool_choice", None)
        body.pop("parallel_tool_calls", None)
    return body


def upstream_body(client_body: dict[str, Any]) -> dict[str, Any]:
    """The base of the turn's upstream requests: the client's body without its messages and
    tools, a streamed one asking for its usage."""
    body = dict(client_body)  # a copy and two removals: no comprehension over every field
    body.pop("messages", None)
    body.pop("tools", None)
    if body.get("stream"):
        body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
    else:
        body.pop("stream_options", None)
    return body


def tool_messages(results: list[ToolResult]) -> tuple[list[Message], Message | None]:
    """One tool message per result, and one user message with their attachments, if any.

    Tool messages carry text only on most servers, so images and audio a tool returned
    travel as content parts of a user message placed right after the results.
    """
    messages: list[Message] = [
        {"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in results
    ]
    parts: list[dict[str, Any]] = []
    for result in results:
        if result.attachments:
            parts.append({"type": "text", "text": f"Attachments of tool call {result.call_id}:"})
            parts.extend(result.attachments)
    return messages, ({"role": "user", "content": parts} if parts else None)


def relax_tool_choice(body: dict[str, Any]) -> dict[str, Any]:
    """After a forced round, let the model answer instead of calling the tool forever."""
    choice = body.get("tool_choice")
    if choice == "required" or isinstance(choice, dict):
        return {**body, "tool_choice": "auto"}
    return body


def client_history(messages: list[Message]) -> tuple[list[Message], bool]:
    """The client's messages without Toolwire's vendor fields (a copy only when one has
    them), and whether they hold a tool round (calls, or their results)."""
    tool_rounds = False
    vendor = False
    for message in messages:
        if message.get("role") == "tool" or message.get("tool_calls"):
            tool_rounds = True
        if "toolwire" in message:
            vendor = True
    if vendor:
        messages = [
            {k: v for k, v in m.items() if k != "toolwire"} if "toolwire" in m else m
            for m in messages
        ]
    return messages, tool_rounds
