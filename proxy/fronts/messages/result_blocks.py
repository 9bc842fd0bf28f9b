"""The blocks of the results of the server tools Toolwire answers for a message.

A tool search's `tool_search_tool_result`, a web search's `web_search_tool_result` (and the
`web_search_result_location` citations of the answer's text), a fetch's
`web_fetch_tool_result` and a program's `code_execution_tool_result`, each made from the
call and the `ToolResult` of the registry tool that answered it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from registry import ToolCall, ToolResult

from ..hosted import Source, cited

Block = dict[str, Any]


def search_result(call: ToolCall, result: ToolResult) -> Block:
    """A search's result as the hosted tool search's block: the tools it found, or the
    error that stopped it (bad input, or no catalog to search)."""
    content: dict[str, Any]
    if result.is_error:
        code = "invalid_tool_input" if result.error_kind == "invalid_arguments" else "unavailable"
        content = {
            "type": "tool_search_tool_result_error",
            "error_code": code,
            "error_message": result.content,
        }
    else:
        references = [{"type": "tool_reference", "tool_name": name} for name in _found(result)]
        content = {"type": "tool_search_tool_search_result", "tool_references": references}
    return {"type": "tool_search_tool_result", "tool_use_id": call.id, "content": content}


_SEARCH_ERRORS = {
    "limit": "max_uses_exceeded",
    "invalid_arguments": "invalid_tool_input",
    "invalid_json": "invalid_tool_input",
    "rate_limit": "too_many_requests",
}


def web_search_result(call: ToolCall, result: ToolResult, found: list[Source]) -> Block:
    """A web search as the hosted one's result: what it found, or why it found nothing."""
    content: Any
    if result.is_error:
        code = _SEARCH_ERRORS.get(result.error_kind or "", "unavailable")
        content = {"type": "web_search_tool_result_error", "error_code": code}
    else:
        content = [
            {
                "type": "web_search_result",
                "url": source.url,
                "title": source.title,
                # Opaque to the client: what the model was given of the page.
                "encrypted_content": source.snippet,
                "page_age": source.page_age,
            }
            for source in found
        ]
    return {"type": "web_search_tool_result", "tool_use_id": call.id, "content": content}


_FETCH_ERRORS = {**_SEARCH_ERRORS, "timeout": "url_not_accessible"}


def web_fetch_result(call: ToolCall, result: ToolResult, url: str) -> Block:
    """A fetch as the hosted one's result: the page as a text document, or why not."""
    content: dict[str, Any]
    if result.is_error:
        code = _FETCH_ERRORS.get(result.error_kind or "", "unavailable")
        content = {"type": "web_fetch_tool_result_error", "error_code": code}
    else:
        document = {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": result.content},
            "title": None,
        }
        retrieved = datetime.now(UTC).isoformat(timespec="seconds")
        content = {
            "type": "web_fetch_result",
            "url": url,
            "content": document,
            "retrieved_at": retrieved,
        }
    return {"type": "web_fetch_tool_result", "tool_use_id": call.id, "content": content}


def web_citations(text: str, found: list[Source]) -> list[dict[str, Any]]:
    """`web_search_result_location` citations for the spans of the text naming a source."""
    index = {source.url: i for i, source in enumerate(found)}
    return [
        {
            "type": "web_search_result_location",
            "url": span.source.url,
            "title": span.source.title,
            "encrypted_index": str(index[span.source.url]),
            "cited_text": span.source.snippet[:150],
        }
        for span in cited(text, found)
    ]


def code_execution_result(call: ToolCall, result: ToolResult) -> Block:
    """A finished program as the hosted code execution's result: what it printed, or the
    error that stopped it."""
    content: dict[str, Any] = {
        "type": "code_execution_result",
        "stdout": "" if result.is_error else result.content,
        "stderr": result.content if result.is_error else "",
        "return_code": 1 if result.is_error else 0,
        "content": [],
    }
    return {"type": "code_execution_tool_result", "tool_use_id": call.id, "content": content}


def _found(result: ToolResult) -> list[str]:
    """The names of the tools a `tool_search` result found."""
    if result.is_error:
        return []
    try:
        tools = orjson.loads(result.content).get("tools")
    except (orjson.JSONDecodeError, AttributeError):
        return []
    return [
        t["name"] for t in tools or () if isinstance(t, dict) and isinstance(t.get("name"), str)
    ]
