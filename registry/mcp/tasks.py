"""Tool calls run as MCP tasks (2025-11-25's experimental tasks): created, followed, cancelled.

A tool whose listing says `execution.taskSupport` is `required` or `optional`, on a server
whose capabilities include `tasks.requests.tools.call`, is called as a task: the
`tools/call` carries `task`, the server answers at once with a task, and the call then
follows it (`tasks/get` every `pollInterval`, or sooner when a `notifications/tasks/status`
arrives) to its end, whose result `tasks/result` fetches. Meanwhile the task's status
messages and its `notifications/progress` reach the call's reporter. A call whose caller
goes away (a timeout, a client that disconnected) cancels its task (`tasks/cancel`) before
it ends: no task is left running for nobody.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp import ClientSession, MCPError
from mcp.client.extension import NotificationBinding
from mcp.shared.dispatcher import CallOptions

from registry.mcp.errors import McpCallError
from registry.mcp.progress import CallReporter

__all__ = ["TaskCalls", "send_raw"]

log = logging.getLogger("toolwire.mcp")

TASK_TTL_MS = 3_600_000
"""How long the server is asked to keep a task (an hour; it may keep it shorter)."""
DEFAULT_POLL_S = 1.0
"""Between two `tasks/get` when the server suggests no interval."""
MIN_POLL_S = 0.02
MAX_POLL_S = 10.0
REQUEST_TIMEOUT_S = 30.0
"""Each `tasks/*` request's own bound (the call's timeout bounds the whole wait)."""
CANCEL_TIMEOUT_S = 5.0
"""How long a `tasks/cancel` may take when the call is abandoned."""
_TASK_SUPPORT = frozenset({"required", "optional"})
_TERMINAL = frozenset({"completed", "failed", "cancelled"})
_STATUS_METHOD = "notifications/tasks/status"
_Listed = Callable[[list[types.Tool]], None]


class _Watch:
    """One task being followed: its latest state, and a wake-up for the follower."""

    __slots__ = ("changed", "reporter", "task")

    def __init__(self, task: types.Task, reporter: CallReporter | None) -> None:
        self.task = task
        self.reporter = reporter
        self.changed = anyio.Event()


class TaskCalls:
    """Which tools of one server run as tasks, and the tasks being followed."""

    def __init__(self, label: str) -> None:
        self._label = label
        self._server_accepts = False
        self._tools: frozenset[str] = frozenset()
        self._watches: dict[str, _Watch] = {}

    def binding(self) -> NotificationBinding[types.TaskStatusNotificationParams]:
        """The session's binding of task status notifications (not in the SDK's tables)."""
        return NotificationBinding(
            method=_STATUS_METHOD,
            params_type=types.TaskStatusNotificationParams,
            handler=self._on_status,
        )

    def learn_server(self, capabilities: types.ServerCapabilities | None) -> None:
        """Take the server's capabilities from its `initialize` answer."""
        tasks = capabilities.tasks if capabilities is not None else None
        requests = tasks.requests if tasks is not None else None
        self._server_accepts = bool(requests and requests.tools and requests.tools.call)

    def following(self, on_tools: _Listed) -> _Listed:
        """`on_tools`, after learning each listing's task support."""

        def listed(tools: list[types.Tool]) -> None:
            self.learn_tools(tools)
            on_tools(tools)

        return listed

    def learn_tools(self, tools: list[types.Tool]) -> None:
        """Take each tool's task support from a fresh listing."""
        self._tools = frozenset(
            tool.name
            for tool in tools
            if tool.execution is not None and tool.execution.task_support in _TASK_SUPPORT
        )

    def runs_as_task(self, name: str) -> bool:
        return self._server_accepts and name in self._tools

    async def call(
        self,
        session: ClientSession,
        name: str,
        arguments: dict[str, Any],
        meta: types.RequestParamsMeta,
        reporter: CallReporter | None,
    ) -> types.CallToolResult:
        """Call a tool as a task and wait for its result; cancel the task if abandoned.

        Raises:
            MCPError: the server refused the call, or a `tasks/*` request failed.
            McpCallError: the task failed or was cancelled by the server.
        """
        call = types.CallToolRequestParams(name=name, arguments=arguments, _meta=meta)
        params = call.model_dump(by_alias=True, mode="json", exclude_none=True)
        params["task"] = {"ttl": TASK_TTL_MS}
        answer = await self._create(session, params)
        if "task" not in answer:  # the server chose to answer at once
            return types.CallToolResult.model_validate(answer, by_name=False)
        watch = _Watch(types.Task.model_validate(answer["task"], by_name=False), reporter)
        task_id = watch.task.task_id
        self._watches[task_id] = watch
        try:
            return await self._result(session, await self._follow(session, watch))
        except BaseException:
            if watch.task.status not in _TERMINAL:
                await self._cancel(session, task_id)
            raise
        finally:
            del self._watches[task_id]

    async def _create(self, session: ClientSession, params: dict[str, Any]) -> dict[str, Any]:
        """Send the task-augmented `tools/call`; its answer. A caller that goes away while
        the server creates the task still learns the task's id, and cancels it."""
        creating = asyncio.ensure_future(
            send_raw(session, "tools/call", params, limit_s=REQUEST_TIMEOUT_S)
        )
        try:
            return await asyncio.shield(creating)
        except asyncio.CancelledError:
            await self._cancel_created(session, creating)
            raise

    async def _cancel_created(
        self, session: ClientSession, creating: asyncio.Future[dict[str, Any]]
    ) -> None:
        try:
            async with asyncio.timeout(CANCEL_TIMEOUT_S):
                answer = await creating
        except (TimeoutError, MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # no answer: no task to cancel
        task = answer.get("task")
        if isinstance(task, dict) and isinstance(task.get("taskId"), str):
            await self._cancel(session, task["taskId"])

    async def _follow(self, session: ClientSession, watch: _Watch) -> types.Task:
        """Poll (or be told) until the task ends; its last state."""
        task = watch.task
        shown = (task.status, task.status_message)
        while task.status not in _TERMINAL:
            if task.status == "input_required":
                # The server asks its questions while the requestor waits on tasks/result.
                return task
            interval = (task.poll_interval or DEFAULT_POLL_S * 1000) / 1000
            with anyio.move_on_after(min(max(interval, MIN_POLL_S), MAX_POLL_S)):
                await watch.changed.wait()
            if watch.changed.is_set():
                watch.changed = anyio.Event()
                task = watch.task
            else:
                task = watch.task = await _get(session, task.task_id)
            if (task.status, task.status_message) != shown:
                shown = (task.status, task.status_message)
                if watch.reporter is not None:
                    watch.reporter.status(task.status, task.status_message)
        return task

    async def _result(self, session: ClientSession, task: types.Task) -> types.CallToolResult:
        if task.status == "cancelled":
            reason = f": {task.status_message}" if task.status_message else ""
            raise McpCallError(f"the server cancelled the task{reason}")
        try:
            raw = await send_raw(session, "tasks/result", {"taskId": task.task_id}, limit_s=None)
        except MCPError as exc:
            raise McpCallError(f"the task failed: {exc.message}") from exc
        if task.status == "failed":
            # A failed task's result is its error; a server that answers anyway still failed.
            raise McpCallError(f"the task failed: {task.status_message or 'no reason given'}")
        return types.CallToolResult.model_validate(raw, by_name=False)

    async def _cancel(self, session: ClientSession, task_id: str) -> None:
        """Cancel an abandoned task, whatever cancels the caller meanwhile (bounded)."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_TIMEOUT_S):
            try:
                await send_raw(
                    session, "tasks/cancel", {"taskId": task_id}, limit_s=CANCEL_TIMEOUT_S
                )
            except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                log.warning(
                    "MCP server %s: cancelling task %s failed: %s", self._label, task_id, exc
                )
            else:
                log.info("MCP server %s: cancelled task %s", self._label, task_id)

    async def _on_status(self, params: types.TaskStatusNotificationParams) -> None:
        watch = self._watches.get(params.task_id)
        if watch is None:
            return
        watch.task = types.Task.model_validate(params.model_dump(by_alias=True), by_name=False)
        watch.changed.set()


async def _get(session: ClientSession, task_id: str) -> types.Task:
    raw = await send_raw(session, "tasks/get", {"taskId": task_id}, limit_s=REQUEST_TIMEOUT_S)
    return types.Task.model_validate(raw, by_name=False)


async def send_raw(
    session: ClientSession,
    method: str,
    params: dict[str, Any],
    *,
    limit_s: float | None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One request, its raw result: the SDK knows the task methods and the task-augmented
    `tools/call` answer as types only, so they are sent and read here (stamped as the SDK
    stamps its own, `headers` added).

    Raises:
        MCPError: an error answer, a timeout, or a closed connection.
    """
    data: dict[str, Any] = {"method": method, "params": params}
    options: CallOptions = {} if limit_s is None else {"timeout": limit_s}
    session._stamp(data, options)
    if headers:
        options.setdefault("headers", {}).update(headers)
    return await session._dispatcher.send_raw_request(method, data["params"], options)
