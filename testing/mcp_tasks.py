"""An MCP server whose slow tools run as tasks (MCP 2025-11-25's experimental tasks), for tests.

Run it over stdio with `python -m testing.mcp_tasks`, or serve it over Streamable HTTP on an
ephemeral port with `serve_tasks_http()`.

Tools:
- `crunch(steps, delay, marks)`: task support required. Reports progress after each step
  (`notifications/progress` with the call's token, and a `notifications/tasks/status`), then
  answers `crunched N steps`. With `marks` (a directory), it creates `marks/started` when it
  starts and `marks/cancelled` when `tasks/cancel` reaches it.
- `crunch_fails(reason)`: task support optional; as a task, the task fails with `reason`
  (a JSON-RPC error); called plainly, the call fails the same way.
- `crunch_tool_error()`: task support required; the task completes with an `isError` result.
- `plain(text)`: no task support; reports one step of progress, answers 50 ms later.

The server advertises `tasks.requests.tools.call`, `tasks.cancel` and `tasks.list` to a
2025-11-25 client, and the `io.modelcontextprotocol/tasks` extension to a 2026-07-28 one,
whose calls of the task tools it then answers with task handles (`tasks/get` carries the
result inline; `tasks/cancel` acknowledges).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["TaskBoard", "build_tasks_server", "serve_tasks_http", "stdio_tasks_command"]

POLL_INTERVAL_MS = 50
EXTENSION = "io.modelcontextprotocol/tasks"

_TOOLS = [
    types.Tool(
        name="crunch",
        description="Crunch numbers slowly, step by step.",
        input_schema={
            "type": "object",
            "properties": {
                "steps": {"type": "integer", "minimum": 1},
                "delay": {"type": "number", "minimum": 0},
                "marks": {"type": "string"},
            },
            "required": ["steps"],
        },
        execution=types.ToolExecution(task_support="required"),
    ),
    types.Tool(
        name="crunch_fails",
        description="Fails while it crunches.",
        input_schema={"type": "object", "properties": {"reason": {"type": "string"}}},
        execution=types.ToolExecution(task_support="optional"),
    ),
    types.Tool(
        name="crunch_tool_error",
        description="Crunches to a tool error.",
        input_schema={"type": "object", "properties": {}},
        execution=types.ToolExecution(task_support="required"),
    ),
    types.Tool(
        name="plain",
        description="Answers at once.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    ),
]


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()


@dataclass
class _Task:
    task_id: str
    created_at: str
    status: str = "working"
    message: str | None = None
    result: dict[str, Any] | None = None
    error: MCPError | None = None
    updated_at: str = field(default_factory=_now)
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    marks: Path | None = None

    def wire(self, *, modern: bool = False) -> dict[str, Any]:
        """The task as 2025-11-25 shows it, or as 2026-07-28's `tasks/get` does (durations
        in `...Ms` keys, the result or error inline once it ended)."""
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at,
        }
        if modern:
            task.update(ttlMs=60_000, pollIntervalMs=POLL_INTERVAL_MS)
            if self.status == "completed" and self.result is not None:
                task["result"] = self.result
            if self.status == "failed" and self.error is not None:
                task["error"] = {"code": self.error.code, "message": self.error.message}
        else:
            task.update(ttl=60_000, pollInterval=POLL_INTERVAL_MS)
        if self.message is not None:
            task["statusMessage"] = self.message
        return task

    def settle(self, status: str, message: str | None = None) -> None:
        self.status, self.message, self.updated_at = status, message, _now()
        self.done.set()


Notify = Callable[[str, dict[str, Any]], Awaitable[None]]


class TaskBoard:
    """The server's tasks, run in a task group the server owns for its lifetime."""

    def __init__(self) -> None:
        self.tasks: dict[str, _Task] = {}
        self.cancelled = anyio.Event()
        """Set when a `tasks/cancel` reached a task still working (in-process tests wait on it)."""
        self._ids = itertools.count(1)
        self._group: anyio.abc.TaskGroup | None = None

    @contextlib.asynccontextmanager
    async def running(self, _server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as group:
            self._group = group
            yield {}
            group.cancel_scope.cancel()

    def start(self, name: str, arguments: dict[str, Any], notify: Notify, token: Any) -> _Task:
        assert self._group is not None, "the server's lifespan is not running"
        task = _Task(task_id=f"task-{next(self._ids)}", created_at=_now())
        marks = arguments.get("marks")
        task.marks = Path(marks) if marks else None
        self.tasks[task.task_id] = task
        self._group.start_soon(self._run, task, name, arguments, notify, token)
        return task

    async def _run(
        self, task: _Task, name: str, arguments: dict[str, Any], notify: Notify, token: Any
    ) -> None:
        with task.scope:
            try:
                task.result = await _work(name, arguments, task, notify, token)
            except MCPError as exc:
                task.error = exc
                task.settle("failed", exc.message)
            else:
                task.settle("completed")
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await notify("notifications/tasks/status", task.wire())

    def cancel(self, task_id: str) -> _Task:
        task = self.find(task_id)
        if task.status == "working":
            if task.marks is not None:
                (task.marks / "cancelled").touch()
            self.cancelled.set()
            task.scope.cancel()
            task.settle("cancelled", "cancelled by the client")
        return task

    def find(self, task_id: str) -> _Task:
        task = self.tasks.get(task_id)
        if task is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"no task {task_id!r}")
        return task


async def _work(
    name: str, arguments: dict[str, Any], task: _Task | None, notify: Notify, token: Any
) -> dict[str, Any]:
    """Run a tool; its result as a wire dict. Raises MCPError for a JSON-RPC failure."""
    if name == "crunch":
        steps, delay = int(arguments["steps"]), float(arguments.get("delay", 0.01))
        if task is not None and task.marks is not None:
            (task.marks / "started").touch()
        for step in range(1, steps + 1):
            await anyio.sleep(delay)
            message = f"step {step} of {steps}"
            if token is not None:
                progress = {"progressToken": token, "progress": step, "total": steps}
                await notify("notifications/progress", {**progress, "message": message})
            if task is not None:
                task.message, task.updated_at = message, _now()
                await notify("notifications/tasks/status", task.wire())
        return _text(f"crunched {steps} steps")
    if name == "crunch_fails":
        await anyio.sleep(0.01)
        raise MCPError(code=types.INTERNAL_ERROR, message=str(arguments.get("reason", "it broke")))
    if name == "crunch_tool_error":
        return {**_text("the numbers did not add up"), "isError": True}
    if name == "plain":
        if token is not None:
            await notify("notifications/progress", {"progressToken": token, "progress": 1})
            await anyio.sleep(0.05)  # a little work after the report, as a real tool does
        return _text(f"plain {arguments.get('text', '')}")
    raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool {name!r}")


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


def build_tasks_server(board: TaskBoard | None = None) -> Server[Any]:
    """The server, its tasks on `board` (a new one if not given)."""
    board = board or TaskBoard()

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=_TOOLS)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
        """A call that is not a task: run it within the request."""
        arguments = params.arguments or {}
        token = (ctx.meta or {}).get("progress_token")
        if params.name in ("crunch", "crunch_tool_error"):
            raise MCPError(
                code=types.METHOD_NOT_FOUND, message=f"{params.name} runs as a task only"
            )

        async def notify(method: str, body: dict[str, Any]) -> None:
            if method == "notifications/progress":
                await ctx.session.send_progress_notification(
                    body["progressToken"],
                    body["progress"],
                    body.get("total"),
                    body.get("message"),
                    related_request_id=ctx.request_id,  # type: ignore[arg-type]
                )

        return types.CallToolResult.model_validate(
            await _work(params.name, arguments, None, notify, token)
        )

    server: Server[Any] = Server(
        "toolwire-test-tasks",
        lifespan=board.running,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )

    async def get_task(ctx: Any, params: types.GetTaskRequestParams) -> dict[str, Any]:
        return board.find(params.task_id).wire(modern=_modern(ctx))

    async def task_result(ctx: Any, params: types.GetTaskPayloadRequestParams) -> dict[str, Any]:
        task = board.find(params.task_id)
        await task.done.wait()
        if task.error is not None:
            raise task.error
        if task.result is None:
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"task {task.task_id} was {task.status}"
            )
        related = {"io.modelcontextprotocol/related-task": {"taskId": task.task_id}}
        return {**task.result, "_meta": related}

    async def cancel_task(ctx: Any, params: types.CancelTaskRequestParams) -> dict[str, Any]:
        task = board.cancel(params.task_id)
        return {} if _modern(ctx) else task.wire()

    server.add_request_handler("tasks/get", types.GetTaskRequestParams, get_task)
    server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, task_result)
    server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, cancel_task)
    server.middleware.append(_TaskCalls(board))
    server.extensions[EXTENSION] = {}  # 2026-07-28's tasks extension, in server/discover
    return server


def _modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _declares_tasks(params: Mapping[str, Any]) -> bool:
    """Whether a 2026-07-28 request's client declared the tasks extension."""
    meta = params.get("_meta") or {}
    capabilities = meta.get("io.modelcontextprotocol/clientCapabilities") or {}
    return EXTENSION in (capabilities.get("extensions") or {})


class _TaskCalls:
    """Answers a task-augmented `tools/call` with a `CreateTaskResult`, and advertises tasks
    in the `initialize` result (the SDK knows tasks as types only)."""

    def __init__(self, board: TaskBoard) -> None:
        self._board = board

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        params = ctx.params or {}
        if ctx.method == "initialize":
            result = await call_next(ctx)
            assert isinstance(result, dict), "the runner dumps the initialize result"
            result["capabilities"]["tasks"] = {
                "list": {},
                "cancel": {},
                "requests": {"tools": {"call": {}}},
            }
            return result
        if ctx.method != "tools/call":
            return await call_next(ctx)
        name = str(params.get("name"))
        arguments = dict(params.get("arguments") or {})
        if _modern(ctx):
            # 2026-07-28: the server decides; every task tool answers with a handle when the
            # client declared the extension (no progress on tasks in that dialect).
            if name == "plain" or not _declares_tasks(params):
                return await call_next(ctx)
            task = self._board.start(name, arguments, _silent, None)
            return {"resultType": "task", **task.wire(modern=True)}
        if "task" not in params:
            return await call_next(ctx)
        if name == "plain":
            raise MCPError(code=types.INVALID_PARAMS, message="plain does not run as a task")
        token = (params.get("_meta") or {}).get("progressToken")
        outbound = ctx.session._connection  # the standalone stream: the call's own one ends

        async def notify(method: str, body: dict[str, Any]) -> None:
            await outbound.notify(method, body)

        task = self._board.start(name, arguments, notify, token)
        return {"task": task.wire()}


async def _silent(method: str, body: dict[str, Any]) -> None:
    """A 2026-07-28 task's notifier: that dialect sends none for tasks."""


async def _run_stdio() -> None:
    server = build_tasks_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


@contextlib.asynccontextmanager
async def serve_tasks_http(board: TaskBoard | None = None) -> AsyncIterator[str]:
    """Serve the tasks server over Streamable HTTP on an ephemeral loopback port; yields its
    URL. Its tasks live on `board` (watch `board.cancelled` to see a cancel arrive)."""
    # Imported here: the stdio server (a process of its own) needs only the SDK.
    from testing.asgi_serving import serve_app

    server = build_tasks_server(board)
    async with serve_app(server.streamable_http_app(), timeout_graceful_shutdown=1) as root:
        yield root + "/mcp"


def stdio_tasks_command() -> list[str]:
    """The `command` of an `mcp:` entry that runs this server over stdio."""
    return ["python", "-m", "testing.mcp_tasks"]


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    anyio.run(_run_stdio)


if __name__ == "__main__":
    main()
