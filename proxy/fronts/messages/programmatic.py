"""Anthropic's programmatic tool calling and tool search, answered by Toolwire's code mode
and tool search for any upstream.

A client written for it declares the code execution tool (`code_execution_2025…`) and marks
the tools a program may call with `allowed_callers`. Here that turns code mode on for the
request; each tool's callers map onto Toolwire's ("direct", "programmatic"); a program's
call of the client's tool comes back as a `tool_use` block whose `caller` names the program,
shown as the `server_tool_use` block it stands for; and the blocks of earlier turns that only
the hosted server reads (`server_tool_use`, `code_execution_tool_result`, `caller`) are
taken out of the history before the loop reads it.
"""

from __future__ import annotations

from typing import Any

from ...turn.client_tools import ALLOWED_CALLERS, DEFER_LOADING

CODE_EXECUTION = "code_execution"
_SERVER_BLOCKS = frozenset(
    {
        "server_tool_use",
        "code_execution_tool_result",
        "tool_search_tool_result",
        "web_search_tool_result",
        "web_fetch_tool_result",
    }
)
_SERVER_TOOLS = ("code_execution_", "tool_search_tool_", "web_search_", "web_fetch_")
"""The hosted server's own tool types, answered by Toolwire's code mode and tool search, and
by the registry tools `hosted_tools` maps to the web search and fetch."""


def tool_search_name(raw: dict[str, Any]) -> str | None:
    """The hosted tool-search tool the client declared, by the name its blocks carry
    (`tool_search_tool_regex`, `tool_search_tool_bm25`), if it did."""
    for tool in raw.get("tools") or ():
        kind = tool.get("type") if isinstance(tool, dict) else None
        if isinstance(kind, str) and kind.startswith("tool_search_tool_"):
            return kind.rsplit("_", 1)[0]
    return None


def code_execution_type(raw: dict[str, Any]) -> str | None:
    """The code execution tool's type the client declared, if it did."""
    for tool in raw.get("tools") or ():
        kind = tool.get("type") if isinstance(tool, dict) else None
        if isinstance(kind, str) and kind.startswith("code_execution_"):
            return kind
    return None


def programs_shown(raw: dict[str, Any]) -> frozenset[str]:
    """The ids of the programs earlier turns showed (their `server_tool_use` blocks, sent
    back as they came): one resumed now that pauses again is not shown a second time."""
    return frozenset(
        str(block.get("id"))
        for message in raw.get("messages") or ()
        if isinstance(message, dict) and message.get("role") == "assistant"
        for block in message.get("content") or ()
        if isinstance(block, dict)
        and block.get("type") == "server_tool_use"
        and block.get("name") == CODE_EXECUTION
    )


def client_marks(raw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The request without what only the hosted server reads (its own tool types, the
    blocks of its earlier turns), and what it says of each client tool in Toolwire's words
    (`allowed_callers`, `defer_loading`), by tool name. A request with none of these is
    returned as it is (no copy: most requests)."""
    if not _hosted(raw):
        return raw, {}
    tools, marks = [], {}
    for tool in raw.get("tools") or ():
        if not isinstance(tool, dict):
            tools.append(tool)
            continue
        kind = tool.get("type")
        if isinstance(kind, str) and kind.startswith(_SERVER_TOOLS):
            continue
        said: dict[str, Any] = {}
        allowed = tool.get(ALLOWED_CALLERS)
        if isinstance(allowed, list):
            said[ALLOWED_CALLERS] = [
                "direct" if caller == "direct" else "programmatic" for caller in allowed
            ]
        if tool.get(DEFER_LOADING) is True:
            said[DEFER_LOADING] = True
        if said and isinstance(tool.get("name"), str):
            marks[tool["name"]] = said
        tools.append({k: v for k, v in tool.items() if k not in (ALLOWED_CALLERS, DEFER_LOADING)})
    request = {**raw, "messages": [_without_server_blocks(m) for m in raw.get("messages", ())]}
    if "tools" in raw:
        request["tools"] = tools
    return request, marks


def _hosted(raw: dict[str, Any]) -> bool:
    """Whether the request says anything only a hosted server reads."""
    for tool in raw.get("tools") or ():
        if isinstance(tool, dict) and (
            ALLOWED_CALLERS in tool
            or DEFER_LOADING in tool
            or str(tool.get("type", "")).startswith(_SERVER_TOOLS)
        ):
            return True
    for message in raw.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") == "assistant" and isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and (
                    block.get("type") in _SERVER_BLOCKS or "caller" in block
                ):
                    return True
    return False


def _without_server_blocks(message: Any) -> Any:
    content = message.get("content") if isinstance(message, dict) else None
    if message.get("role") != "assistant" or not isinstance(content, list):
        return message
    kept = [
        {k: v for k, v in block.items() if k != "caller"} if "caller" in block else block
        for block in content
        if not (isinstance(block, dict) and block.get("type") in _SERVER_BLOCKS)
    ]
    return {**message, "content": kept}


__all__ = [
    "CODE_EXECUTION",
    "client_marks",
    "code_execution_type",
    "programs_shown",
    "tool_search_name",
]
