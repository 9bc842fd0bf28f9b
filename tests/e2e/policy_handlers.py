"""Policy handlers the governance tests name by import path."""

from __future__ import annotations

import asyncio
from typing import Any

from policies import CallContext
from registry import Tool


def small_sums_only(tool: Tool, arguments: dict[str, Any], context: CallContext) -> Any:
    """Allow adding small numbers; ask for anything else on `t.add`; deny other tools."""
    if tool.qualified_name != "t.add":
        return ("deny", "only t.add is handled here")
    if all(isinstance(v, int) and v < 100 for v in arguments.values()):
        return "allow"
    return ("ask", "large sums need a human")


async def async_by_key(tool: Tool, arguments: dict[str, Any], context: CallContext) -> str:
    """Async: allow the master key, deny everyone else."""
    await asyncio.sleep(0)
    return "allow" if context.caller == "master" else "deny"


def broken(tool: Tool, arguments: dict[str, Any], context: CallContext) -> str:
    raise RuntimeError("handler bug")


def nonsense(tool: Tool, arguments: dict[str, Any], context: CallContext) -> str:
    return "maybe"
