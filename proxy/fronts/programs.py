"""The hosted APIs' programmatic tool calling, answered by Toolwire's code mode: what the
fronts share. A client tool's `allowed_callers` (in Toolwire's words: "direct" for the model,
"programmatic" for a program) rides on its entry of the loop's Chat body, which the loop
reads and never sends upstream."""

from __future__ import annotations

from typing import Any

from ..turn.programs import ALLOWED_CALLERS


def mark_callers(chat: dict[str, Any], callers: dict[str, list[str]]) -> None:
    """Put each client tool's callers (by tool name) on its entry of the loop's Chat body."""
    for tool in chat.get("tools") or ():
        name = (tool.get("function") or {}).get("name")
        if name in callers:
            tool[ALLOWED_CALLERS] = callers[name]


__all__ = ["ALLOWED_CALLERS", "mark_callers"]
