"""Anthropic's `tool_reference` blocks: how a search loads deferred tools.

A client running its own search answers its search tool's `tool_use` with a `tool_result`
whose content holds `tool_reference` blocks (`{"type": "tool_reference", "tool_name": …}`);
Anthropic then loads the named deferred tools (`defer_loading: true`) for the rest of the
conversation. Toolwire does the same for any upstream: each named client tool is offered
from then on, and the block reaches the upstream as text (no upstream but Anthropic's own
server knows it, and its server is not the one answering). The references of Toolwire's own
earlier searches (`tool_search_tool_result` blocks, sent back as they came) load the same
way.
"""

from __future__ import annotations

from typing import Any

from ...errors import BadRequestError

Block = dict[str, Any]
REFERENCE = "tool_reference"


def load_references(raw: dict[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """The request with the `tool_reference` blocks of its tool results as text, and the
    names of the tools its searches loaded (the client's, and the registry's deferred ones
    Toolwire's searches found). A request without references is returned as it is (no
    copy).

    Raises:
        BadRequestError: a client's reference names no tool of the request.
    """
    messages = raw.get("messages")
    if not isinstance(messages, list) or not any(_references(m) for m in messages):
        return raw, frozenset()
    tools = {t.get("name") for t in raw.get("tools") or () if isinstance(t, dict)}
    loaded: set[str] = set()
    out = []
    for i, message in enumerate(messages):
        if not _references(message):
            out.append(message)
        elif message.get("role") == "assistant":
            # Toolwire's own searches of earlier turns: their blocks go as they came.
            loaded.update(_searched(message["content"]))
            out.append(message)
        else:
            content = [
                _as_text(block, f"messages[{i}]", tools, loaded) for block in message["content"]
            ]
            out.append({**message, "content": content})
    return {**raw, "messages": out}, frozenset(loaded)


def _references(message: Any) -> bool:
    """Whether a message holds `tool_reference` blocks (in tool results, or in the results
    of Toolwire's own searches)."""
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return False
    for block in content:
        if not isinstance(block, dict):
            continue
        inner = block.get("content")
        if block.get("type") == "tool_result" and isinstance(inner, list):
            if any(isinstance(b, dict) and b.get("type") == REFERENCE for b in inner):
                return True
        elif block.get("type") == "tool_search_tool_result" and isinstance(inner, dict):
            return True
    return False


def _searched(content: list[Any]) -> list[str]:
    names = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_search_tool_result":
            result = block.get("content")
            for ref in result.get("tool_references") or () if isinstance(result, dict) else ():
                if isinstance(ref, dict) and isinstance(ref.get("tool_name"), str):
                    names.append(ref["tool_name"])
    return names


def _as_text(block: Any, where: str, tools: set[Any], loaded: set[str]) -> Any:
    """A tool result with its references as one text block; other blocks as they are.

    Raises:
        BadRequestError: a reference names no tool of the request.
    """
    inner = block.get("content") if isinstance(block, dict) else None
    if not isinstance(inner, list) or block.get("type") != "tool_result":
        return block
    names, kept = [], []
    for part in inner:
        if not (isinstance(part, dict) and part.get("type") == REFERENCE):
            kept.append(part)
            continue
        name = part.get("tool_name")
        if not isinstance(name, str) or name not in tools:
            raise BadRequestError(
                f"{where}: a tool_reference names no tool of the request: {name!r} (declare "
                "it in tools, with defer_loading: true to offer it only once referenced)",
                param=f"{where}.content",
            )
        names.append(name)
    if not names:
        return block
    loaded.update(names)
    text = "These tools are loaded and can be called from now on: " + ", ".join(names)
    return {**block, "content": [{"type": "text", "text": text}, *kept]}


__all__ = ["REFERENCE", "load_references"]
