"""A server's tools read whole: every page of `tools/list`, within one deadline and a bound
on the pages (a server that pages forever is refused, not followed)."""

from __future__ import annotations

import anyio
import mcp_types as types
from mcp import ClientSession

from registry.mcp.errors import McpCallError

__all__ = ["LIST_TIMEOUT_S", "MAX_LIST_PAGES", "list_all"]

LIST_TIMEOUT_S = 30.0
MAX_LIST_PAGES = 1000


async def list_all(session: ClientSession) -> list[types.Tool]:
    """Every page of `tools/list`."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    with anyio.fail_after(LIST_TIMEOUT_S):
        for _ in range(MAX_LIST_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools
    raise McpCallError(f"tools/list returned more than {MAX_LIST_PAGES} pages")
