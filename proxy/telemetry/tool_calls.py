"""The executor's listener that counts, times and traces every tool call and every
permission decision the gate makes about one."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from registry import CallEvent, ToolResult

from ..server.context import RequestStats, current_request
from .metrics import Metrics
from .tracing import Tracing

OK = "ok"
RUN_CODE = "run_code"
"""The span name's tool for a code-mode program's run."""
_REFUSALS = frozenset({"denied", "refused"})
"""Permission outcomes that end a call before it runs (`asked` waits for the client)."""
_APPROVALS = frozenset({"asked", "approved"})


@dataclass(slots=True)
class _Running:
    started: float
    stats: RequestStats | None
    span: Any = None
    token: object = None


_running: ContextVar[_Running | None] = ContextVar("toolwire_tool_call", default=None)
"""The call this task runs now: the executor calls `before_call` and `after_call` from the
same task, and runs concurrent calls in tasks of their own."""


class ToolCallListener:
    """Tool calls into the request's stats, the metrics and the trace."""

    def __init__(self, metrics: Metrics | None, tracing: Tracing | None) -> None:
        self._metrics = metrics
        self._tracing = tracing

    @contextlib.contextmanager
    def program(self, call_id: str) -> Iterator[None]:
        """A code-mode program's run as a span of its own, current while it runs: its inner
        calls' spans hang under it."""
        if self._tracing is None:
            yield
            return
        span, token = self._tracing.start_tool(RUN_CODE, call_id)
        error: str | None = None
        try:
            yield
        except BaseException:
            error = "error"
            raise
        finally:
            self._tracing.end_tool(span, token, error)

    def before_call(self, event: CallEvent) -> None:
        now = time.perf_counter()
        context = current_request.get()
        stats = context.stats if context is not None else None
        if stats is not None:
            stats.tool_calls += 1
            if not stats.tools_running:
                stats.tools_since = now
            stats.tools_running += 1
        running = _Running(now, stats)
        if self._tracing is not None:
            running.span, running.token = self._tracing.start_tool(
                event.tool.qualified_name, event.call.id
            )
        _running.set(running)

    def after_call(self, event: CallEvent, result: ToolResult) -> None:
        now = time.perf_counter()
        running = _running.get()
        if running is None:
            return
        _running.set(None)
        stats = running.stats
        if stats is not None:
            stats.tools_running -= 1
            if not stats.tools_running:
                stats.tool_s += now - stats.tools_since
        kind = str(result.error_kind or "error") if result.is_error else None
        if running.span is not None and self._tracing is not None:
            self._tracing.end_tool(running.span, running.token, kind)
        if self._metrics is not None:
            tool, source = event.tool.qualified_name, event.tool.metadata.source
            self._metrics.tool_calls(tool, source, kind or OK).inc()
            self._metrics.tool_seconds(tool, source).observe(now - running.started)

    def mcp_request(self, source: str, kind: str, outcome: str) -> None:
        """Count a question or completion request an MCP server made during a call."""
        if self._metrics is not None:
            self._metrics.mcp_requests(source, kind, outcome).inc()

    def on_permission(self, event: CallEvent, outcome: str, reason: str) -> None:
        if self._metrics is None:
            return
        if outcome in _REFUSALS:
            tool, source = event.tool.qualified_name, event.tool.metadata.source
            self._metrics.tool_calls(tool, source, outcome).inc()
        elif outcome in _APPROVALS:
            self._metrics.approvals(outcome).inc()
