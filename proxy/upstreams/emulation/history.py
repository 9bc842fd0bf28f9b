"""The conversation rewritten for a model without tool calling: calls and results as text."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from .formats import EmulationFormat


def has_tool_history(messages: list[dict[str, Any]]) -> bool:
    """Whether any message carries tool calls or a tool result."""
    return any(
        m.get("role") in ("tool", "function") or m.get("tool_calls") or m.get("function_call")
        for m in messages
    )


def rewrite_history(messages: list[dict[str, Any]], fmt: EmulationFormat) -> list[dict[str, Any]]:
    """Assistant calls in the format's text; consecutive tool results as one user message."""
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    results: list[tuple[str, str]] = []
    for message in messages:
        role = message.get("role")
        if role in ("tool", "function"):
            call_id = message.get("tool_call_id")
            name = names.get(call_id, "") if isinstance(call_id, str) else ""
            results.append((name or str(message.get("name") or ""), text_of(message)))
            continue
        if results:
            out.append({"role": "user", "content": fmt.render_results(results)})
            results = []
        calls = _calls(message)
        if role != "assistant" or not calls:
            out.append(message)
            continue
        for call_id, name, _ in calls:
            if call_id:
                names[call_id] = name
        rendered = fmt.render_calls([(name, arguments) for _, name, arguments in calls])
        content = text_of(message)
        rest = {k: v for k, v in message.items() if k not in ("tool_calls", "function_call")}
        # Rebuild the text the model wrote: its words, then its calls on the next line.
        separator = "" if not content or content.endswith("\n") else "\n"
        out.append({**rest, "content": content + separator + rendered})
    if results:
        out.append({"role": "user", "content": fmt.render_results(results)})
    return out


def text_of(message: dict[str, Any]) -> str:
    """The text of a message's content, a string or a list of text parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def _calls(message: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(id, name, arguments object or raw string) of each call in an assistant message."""
    entries = message.get("tool_calls") or []
    if message.get("function_call"):
        entries = [{"function": message["function_call"]}]
    calls = []
    for entry in entries:
        function = entry.get("function") if isinstance(entry, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            # Invalid JSON stays the string the model wrote, so it sees its own mistake.
            with contextlib.suppress(ValueError):
                arguments = json.loads(arguments) if arguments.strip() else {}
        calls.append((str(entry.get("id") or ""), str(function.get("name") or ""), arguments))
    return calls
