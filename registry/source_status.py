"""How a tool source is doing: what `toolwire check` and `/readyz` report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["LazyState", "SourceStatus"]

LazyState = Literal["stopped", "starting", "running"]


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """How a source is doing: for `toolwire check`, `/readyz` and the logs."""

    name: str
    """A label such as `python:examples/tools.py` or `mcp:time`."""
    reachable: bool
    tool_count: int
    error: str | None = None
    lazy: LazyState | None = None
    """A source started on first use: `stopped`, `starting` or `running` (None: eager)."""
    first_use_s: float | None = None
    """A lazy source: how long its last start took, from the call that asked for it."""
    login: bool = False
    """An MCP source whose tokens come from an operator's login (OAuth authorization code)."""
