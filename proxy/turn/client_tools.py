"""What the hosted APIs let a client say of its own tools, on their entries of the loop's
Chat body (the fronts put it there; no upstream is ever told):

- `allowed_callers`: who may call the tool, "direct" (the model) and "programmatic" (a
  code-mode program); absent, both may;
- `defer_loading`: the tool is not offered until a `tool_search` finds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .record import Turn

ALLOWED_CALLERS = "allowed_callers"
DEFER_LOADING = "defer_loading"
MARKERS = (ALLOWED_CALLERS, DEFER_LOADING)
_WORD = re.compile(r"[a-z0-9]+")

Tool = dict[str, Any]


def mark(chat: dict[str, Any], marks: dict[str, dict[str, Any]]) -> None:
    """Put each client tool's marks (by tool name) on its entry of a Chat body. The entries
    are replaced, not changed: the converter hands out the same tool objects to every
    request that declares the same tool, so a mark put on one would reach the others."""
    tools = chat.get("tools")
    if not tools or not marks:
        return
    chat["tools"] = [
        {**tool, **marks[name]}
        if (name := (tool.get("function") or {}).get("name")) in marks
        else tool
        for tool in tools
    ]


def callable_from_programs(tool: Tool) -> bool:
    """Whether a program may call the client's tool."""
    callers = tool.get(ALLOWED_CALLERS)
    return not isinstance(callers, list) or "programmatic" in callers


def _direct(tool: Tool) -> bool:
    callers = tool.get(ALLOWED_CALLERS)
    return not isinstance(callers, list) or "direct" in callers


def offered(turn: Turn) -> list[Tool]:
    """The client's tools the model is offered from the start, without marks."""
    tools = turn.body.get("tools") or ()
    if not any(key in tool for tool in tools for key in MARKERS):
        return list(tools)
    return [_plain(tool) for tool in tools if _direct(tool) and not tool.get(DEFER_LOADING)]


def deferred(turn: Turn) -> list[Tool]:
    """The client's tools a `tool_search` may load (offered once found), without marks."""
    return [
        _plain(tool)
        for tool in turn.body.get("tools") or ()
        if tool.get(DEFER_LOADING) and _direct(tool)
    ]


def search(tools: Iterable[Tool], query: str, limit: int) -> list[Tool]:
    """The tools whose name and description share most words with `query` (none shared:
    not found), best first."""
    wanted = set(_WORD.findall(query.lower()))
    scored = []
    for order, tool in enumerate(tools):
        function = tool.get("function") or {}
        text = f"{function.get('name', '')} {function.get('description', '')}".lower()
        words = set(_WORD.findall(text.replace("_", " "))) | set(_WORD.findall(text))
        score = len(wanted & words)
        if score:
            scored.append((-score, order, tool))
    return [tool for _, _, tool in sorted(scored, key=lambda s: s[:2])[:limit]]


def _plain(tool: Tool) -> Tool:
    return {k: v for k, v in tool.items() if k not in MARKERS}


__all__ = [
    "ALLOWED_CALLERS",
    "DEFER_LOADING",
    "MARKERS",
    "callable_from_programs",
    "deferred",
    "mark",
    "offered",
    "search",
]
