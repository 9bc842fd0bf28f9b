"""Progress of the calls in flight on one MCP session, by progress token.

Every `tools/call` carries a progress token of its own (`_meta.progressToken`); the server's
`notifications/progress` with that token, and its task status notifications, are routed to
the call's reporter while the call runs (a task's progress keeps its token to the end).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager

import mcp_types as types

from registry.progress import ProgressListener, ToolProgress

__all__ = ["CallReporter", "ProgressRoutes"]


class CallReporter:
    """Turns one call's notifications into `ToolProgress` for its listener."""

    __slots__ = ("_call_id", "_listener", "_said", "_tool")

    def __init__(self, listener: ProgressListener, call_id: str, tool: str) -> None:
        self._listener = listener
        self._call_id = call_id
        self._tool = tool
        self._said: str | None = None
        """The last progress message: a task still working that says it again is not news."""

    def progress(self, params: types.ProgressNotificationParams) -> None:
        self._said = params.message
        self._listener(
            ToolProgress(self._call_id, self._tool, params.progress, params.total, params.message)
        )

    def status(self, status: str, message: str | None) -> None:
        if status == "working" and message is not None and message == self._said:
            return
        self._listener(ToolProgress(self._call_id, self._tool, message=message, status=status))


class ProgressRoutes:
    """The reporters of the calls in flight, by progress token and by task id."""

    def __init__(self) -> None:
        self._tokens = (f"toolwire-{n}" for n in itertools.count(1))
        self._by_token: dict[str, CallReporter] = {}
        self._by_task: dict[str, CallReporter] = {}

    def token(self, reporter: CallReporter | None) -> _TokenRoute:
        """A fresh progress token, routed to `reporter` (if any) until the block ends."""
        return _TokenRoute(self._by_token, next(self._tokens), reporter)

    @contextmanager
    def task(self, task_id: str, reporter: CallReporter | None) -> Iterator[None]:
        """Route the task's status notifications to `reporter` until the block ends."""
        if reporter is None:
            yield
            return
        self._by_task[task_id] = reporter
        try:
            yield
        finally:
            self._by_task.pop(task_id, None)

    def progress(self, params: types.ProgressNotificationParams) -> None:
        """A `notifications/progress` from the server (unknown tokens are dropped)."""
        reporter = self._by_token.get(str(params.progress_token))
        if reporter is not None:
            reporter.progress(params)

    def status(self, task_id: str, status: str, message: str | None) -> None:
        """A task's new status (unknown tasks are dropped)."""
        reporter = self._by_task.get(task_id)
        if reporter is not None:
            reporter.status(status, message)


class _TokenRoute:
    """`ProgressRoutes.token`'s block (a class, not a generator: one per call)."""

    __slots__ = ("_reporter", "_routes", "_token")

    def __init__(
        self, routes: dict[str, CallReporter], token: str, reporter: CallReporter | None
    ) -> None:
        self._routes = routes
        self._token = token
        self._reporter = reporter

    def __enter__(self) -> str:
        if self._reporter is not None:
            self._routes[self._token] = self._reporter
        return self._token

    def __exit__(self, *exc_info: object) -> None:
        if self._reporter is not None:
            del self._routes[self._token]
