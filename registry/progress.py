"""Progress of running tool calls, told to whoever runs them.

A tool that learns how far it got (an MCP server's `notifications/progress`, a task's status
message) reports a `ToolProgress`. It goes to the listener of the code that runs the call: a
turn sets one with `reporting_to(listener)` around the calls it runs, and calls made inside
that block (in its task or in tasks it starts) report to it. Outside such a block reports go
nowhere, at no cost. The listener is plain code: the registry knows nothing of who shows
progress, nor how.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from registry.tool import Tool

__all__ = [
    "REPORTS_PROGRESS",
    "ProgressListener",
    "ToolProgress",
    "current_listener",
    "reporting_to",
    "reports_progress",
]


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """How far one running call got."""

    call_id: str
    tool: str
    """The tool's qualified name."""
    progress: float | None = None
    """Work done so far; it grows with each report (None: a status change only)."""
    total: float | None = None
    """The whole work, when known."""
    message: str | None = None
    status: str | None = None
    """The call's task status when it runs as a task: `working`, `input_required`, ..."""

    def as_dict(self) -> dict[str, Any]:
        """The report as every front shows it: `tool_call_id` and `tool`, then `progress`,
        `total`, `message` and `status` when known (unknown ones are left out)."""
        fields: dict[str, Any] = {"tool_call_id": self.call_id, "tool": self.tool}
        if self.progress is not None:
            fields["progress"] = self.progress
        if self.total is not None:
            fields["total"] = self.total
        if self.message is not None:
            fields["message"] = self.message
        if self.status is not None:
            fields["status"] = self.status
        return fields


ProgressListener = Callable[[ToolProgress], None]
"""Told each report as it comes; it must not block (queue the report and return)."""

_listener: ContextVar[ProgressListener | None] = ContextVar("toolwire_progress", default=None)


def current_listener() -> ProgressListener | None:
    """The listener of the calls made here, if any."""
    return _listener.get()


@contextlib.contextmanager
def reporting_to(listener: ProgressListener) -> Iterator[None]:
    """Calls made in this block (and in tasks started in it) report their progress to
    `listener`."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


REPORTS_PROGRESS = "reports_progress"
"""The key of `ToolMetadata.extra` that says a tool's calls may report progress."""


def reports_progress(tool: Tool) -> bool:
    """Whether calls of `tool` may report progress (running them to show it is worth the
    cost; others run as they always did)."""
    return bool(tool.metadata.extra.get(REPORTS_PROGRESS))
