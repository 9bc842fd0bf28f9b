"""Long tool calls run as MCP tasks: detached from the request, polled, cancellable, and
readable from any replica.

Two dialects share one implementation. A 2025-11-25 client asks for a task by sending
`task: {ttl}` with `tools/call` (the server declares `capabilities.tasks`, each eligible
tool `execution.taskSupport: "optional"`), and uses `tasks/get`, `tasks/result` (which
waits for the end), `tasks/list` and `tasks/cancel`. A 2026-07-28 client declares the
`io.modelcontextprotocol/tasks` extension on its request, and the server decides: an
eligible tool answers with a task handle (`resultType: "task"`), then `tasks/get` carries
the result inline; `tasks/cancel` and `tasks/update` acknowledge.

The call is admitted first, in the request (scope, policy, guards, approval: a question
is asked before any task exists), then runs detached in a task group this front owns,
under the caller's key, through the gate. Its record lives in the task store (shared in
Redis), so any replica answers for it; the replica running it renews a lease on the
record and, on each renewal, learns whether another replica cancelled it. A task belongs
to the key that started it: any other key is told it does not exist.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER
from mcp_types.jsonrpc import HEADER_MISMATCH

from policies import GateDecision
from registry import Tool

from ...config import McpTasksConfig
from ...errors import StateUnavailableError
from ...state.mcp_tasks import McpTaskRecord, McpTaskStore
from .content import runs_as_task
from .task_wire import (
    EXTENSION,
    UpdateTaskParams,
    declares_extension,
    is_modern,
    name_header,
    owner_of,
    result_wire,
    task_json,
    task_request,
)
from .tools import Admitted, McpTools

log = logging.getLogger("toolwire.mcp")

RELATED_TASK = "io.modelcontextprotocol/related-task"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
MISSING_CAPABILITY = -32021
LEASE_S = 15.0
"""How long the running replica vouches for a task; past it, the task was lost."""
RENEW_S = 1.0
"""How often the running replica renews its lease (and sees a cancel made elsewhere)."""
RESULT_POLL_S = 0.25
"""How often `tasks/result` looks at a task another replica runs."""
SETTLE_TIMEOUT_S = 5.0
"""The most a task's last write may take when the server stops."""


class McpTasks:
    """Creates, runs and answers for `/mcp` tasks.

    Use it as server middleware (after the request-state boundary), register `methods`,
    and run `running` while the server runs: leaving it cancels the running calls, whose
    tasks fail saying the server stopped.
    """

    def __init__(
        self,
        store: McpTaskStore,
        config: McpTasksConfig,
        tools: McpTools,
        *,
        identity: Callable[[], dict[str, Any]] = dict,
    ) -> None:
        """`identity`: the server's `serverInfo`, stamped on the task handles it answers
        with itself (the SDK stamps the results it serializes)."""
        self._store = store
        self._identity = identity
        self._config = config
        self._tools = tools
        self._running: dict[str, tuple[anyio.CancelScope, anyio.Event]] = {}
        self._per_key: Counter[str] = Counter()
        """Running tasks by owner."""
        self._group: anyio.abc.TaskGroup | None = None

    def supports(self, tool: Tool) -> bool:
        """Whether `tool` may run as a task (`runs_as_task`)."""
        return runs_as_task(tool, self._config)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run tasks while the block runs; at its end, cancel those still running."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    def methods(self) -> list[tuple[str, type[types.RequestParams], Any]]:
        """The request methods this serves: (method, params model, handler)."""
        return [
            ("tasks/get", types.GetTaskRequestParams, self.get),
            ("tasks/result", types.GetTaskPayloadRequestParams, self.result),
            ("tasks/list", types.PaginatedRequestParams, self.list_tasks),
            ("tasks/cancel", types.CancelTaskRequestParams, self.cancel),
            ("tasks/update", UpdateTaskParams, self.update),
        ]

    # ---- creating: tools/call ----

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        params = task_request(ctx)
        if params is None or not self._runs_as_task(ctx, params):
            return await call_next(ctx)
        modern = is_modern(ctx)
        admitted = await self._tools.admit(ctx, params)
        if not isinstance(admitted, Admitted):
            return admitted if modern else result_wire(admitted)
        if admitted.admission.verdict is not GateDecision.RUN:
            refusal = await self._tools.run(admitted)  # the gate answers with its reason
            return refusal if modern else result_wire(refusal)
        ttl_ms = params.task.ttl if params.task is not None else None
        record = await self.start(admitted, owner_of(ctx), ttl_ms)
        if modern:
            meta = {SERVER_INFO: self._identity()}
            return {"resultType": "task", **task_json(record, modern=True), "_meta": meta}
        return {"task": task_json(record, modern=False)}

    def _runs_as_task(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> bool:
        """Whether a call that may run as a task does; False: it runs in the request (the
        server's choice on 2026-07-28).

        Raises:
            MCPError: a 2025-11-25 client asked a task of a tool that runs none, or while
                `max_running` tasks run, or the key's `max_running_per_key` (before the
                gate: nobody approves a call that then finds no room).
        """
        modern = is_modern(ctx)
        tool = self._tools.find(ctx, params.name)
        if tool is not None and not self.supports(tool):
            if modern:
                return False
            message = f"tool {params.name!r} does not run as a task (its taskSupport is forbidden)"
            raise MCPError(types.METHOD_NOT_FOUND, message)
        full = self._full(owner_of(ctx))
        if full is not None:
            if modern:
                return False
            raise full
        return True

    async def start(self, admitted: Admitted, owner: str, ttl_ms: int | None) -> McpTaskRecord:
        """Record a task for `admitted` and start running it; its first record.

        Raises:
            MCPError: the server is stopping, or runs as many tasks as it may (for the
                process or for `owner`).
        """
        group = self._group
        if group is None:
            raise MCPError(types.INTERNAL_ERROR, "the server is stopping")
        full = self._full(owner)
        if full is not None:
            raise full
        ttl_s = self._config.ttl_s
        if ttl_ms is not None:
            ttl_s = min(ttl_s, max(1.0, ttl_ms / 1000))
        now = time.time()
        record = McpTaskRecord(
            task_id=secrets.token_urlsafe(24),
            owner=owner,
            tool=admitted.tool.qualified_name,
            status="working",
            created_at=now,
            updated_at=now,
            ttl_s=ttl_s,
            status_message=f"running {admitted.tool.qualified_name}",
            lease_until=now + LEASE_S,
        )
        with _storing():
            await self._store.create(record)
        await group.start(self._run, record, admitted)
        return record

    def _full(self, owner: str) -> MCPError | None:
        """The refusal of a new task of `owner` when the process or the key runs as many
        as it may; None when there is room."""
        config = self._config
        if len(self._running) >= config.max_running:
            message = f"{config.max_running} tasks are running already; try later"
        elif self._per_key[owner] >= config.max_running_per_key:
            message = f"this key runs {config.max_running_per_key} tasks already; try later"
        else:
            return None
        return MCPError(types.INTERNAL_ERROR, message)

    async def _run(
        self,
        record: McpTaskRecord,
        admitted: Admitted,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        scope, done = anyio.CancelScope(), anyio.Event()
        self._running[record.task_id] = (scope, done)
        self._per_key[record.owner] += 1
        outcome = record.replace(
            status="failed",
            status_message="the server stopped before the call finished",
            error={"code": types.INTERNAL_ERROR, "message": "the server stopped"},
        )
        task_status.started()
        try:
            with scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(self._keep_lease, record, scope)
                    result = await self._tools.run(admitted)
                    group.cancel_scope.cancel()
                outcome = record.replace(
                    status="completed",
                    status_message="failed" if result.is_error else "done",
                    result=result_wire(result),
                )
        except Exception as exc:
            log.exception("the MCP task %s failed", record.task_id)
            outcome = record.replace(
                status="failed",
                status_message=f"the call failed: {exc}",
                error={"code": types.INTERNAL_ERROR, "message": str(exc)},
            )
        finally:
            try:
                with anyio.CancelScope(shield=True), anyio.move_on_after(SETTLE_TIMEOUT_S):
                    try:
                        await self._store.settle(outcome)
                    except StateUnavailableError as exc:
                        log.warning(
                            "the MCP task %s's outcome was not kept: %s", record.task_id, exc
                        )
            finally:  # also when the settle ends as the stop's cancellation (state.cancels)
                del self._running[record.task_id]
                self._per_key[record.owner] -= 1
                if not self._per_key[record.owner]:
                    del self._per_key[record.owner]
                done.set()

    async def _keep_lease(self, record: McpTaskRecord, scope: anyio.CancelScope) -> None:
        """Renew the lease while the call runs; stop the call once its record is terminal
        (cancelled on another replica) or gone (expired)."""
        while True:
            await anyio.sleep(RENEW_S)
            try:
                kept = await self._store.settle(record.replace(lease_until=time.time() + LEASE_S))
            except StateUnavailableError as exc:
                log.warning("the MCP task %s's lease was not renewed: %s", record.task_id, exc)
                continue
            if kept is None or kept.terminal:
                scope.cancel()
                return

    # ---- answering: tasks/* ----

    async def get(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetTaskRequestParams
    ) -> dict[str, Any]:
        record = await self._owned(ctx, params.task_id)
        return task_json(record, modern=is_modern(ctx), detailed=True)

    async def result(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetTaskPayloadRequestParams
    ) -> dict[str, Any]:
        """The call's result once the task ends (2025-11-25; waits until then)."""
        if is_modern(ctx):
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", data="tasks/result")
        record = await self._owned(ctx, params.task_id)
        while not record.terminal:
            local = self._running.get(record.task_id)
            if local is not None:
                await local[1].wait()
            else:
                await anyio.sleep(RESULT_POLL_S)
            record = await self._owned(ctx, params.task_id)
        if record.status == "cancelled":
            raise MCPError(types.INVALID_REQUEST, f"task {record.task_id} was cancelled")
        if record.result is None:
            error = record.error or {}
            code = int(error.get("code", types.INTERNAL_ERROR))
            raise MCPError(code, str(error.get("message", "the task failed")))
        meta = {**record.result.get("_meta", {}), RELATED_TASK: {"taskId": record.task_id}}
        return {**record.result, "_meta": meta}

    async def list_tasks(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        """The caller's tasks still kept, newest first (2025-11-25)."""
        if is_modern(ctx):
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", data="tasks/list")
        if params.cursor is not None:
            raise MCPError(types.INVALID_PARAMS, f"invalid cursor: {params.cursor!r}")
        with _storing():
            records = await self._store.owned(owner_of(ctx))
        return {"tasks": [task_json(self._checked(r), modern=False) for r in records]}

    async def cancel(
        self, ctx: ServerRequestContext[Any, Any], params: types.CancelTaskRequestParams
    ) -> dict[str, Any]:
        """Cancel a running task; a task that already ended is an error (2025-11-25) or
        acknowledged as it is (2026-07-28)."""
        modern = is_modern(ctx)
        record = await self._owned(ctx, params.task_id)
        if record.terminal and not modern:
            message = f"task {record.task_id} already ended ({record.status})"
            raise MCPError(types.INVALID_PARAMS, message)
        cancelled = record.replace(status="cancelled", status_message="cancelled by the client")
        with _storing():
            kept = await self._store.settle(cancelled) or record
        local = self._running.get(record.task_id)
        if local is not None and kept.status == "cancelled":
            local[0].cancel()
        return {} if modern else task_json(kept, modern=False)

    async def update(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams
    ) -> dict[str, Any]:
        """Acknowledge input for a task (2026-07-28). Toolwire's tasks never wait for input
        (an approval is asked before the task starts), so every response is ignored."""
        await self._owned(ctx, params.task_id)
        return {}

    async def _owned(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> McpTaskRecord:
        """The caller's task `task_id`, as it stands now.

        Raises:
            MCPError: no such task for this caller (another key's is not found either),
                or a 2026-07-28 client that did not declare the extension.
        """
        if is_modern(ctx) and not declares_extension(ctx.params or {}):
            raise MCPError(
                MISSING_CAPABILITY,
                "Missing required client capability",
                data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
            )
        named = name_header(ctx)
        if named is not None and named != task_id:
            # The header routes the request (to the replica holding the task, say): one
            # that names another task than the body does is refused, as the SDK refuses a
            # mismatched `Mcp-Name` on tools/call.
            raise MCPError(HEADER_MISMATCH, f"{MCP_NAME_HEADER} header does not match taskId")
        with _storing():
            record = await self._store.get(task_id)
        if record is None or record.owner != owner_of(ctx):
            raise MCPError(types.INVALID_PARAMS, f"Failed to retrieve task: {task_id!r} not found")
        checked = self._checked(record)
        if checked is record:
            return record
        with _storing():  # the first to notice writes it down (unless an outcome came first)
            return await self._store.settle(checked) or checked

    def _checked(self, record: McpTaskRecord) -> McpTaskRecord:
        """`record`, or a failed copy when the replica running it stopped renewing it."""
        if record.terminal or record.lease_until >= time.time():
            return record
        if record.task_id in self._running:
            return record
        return record.replace(
            status="failed",
            status_message="the replica running the call stopped",
            error={"code": types.INTERNAL_ERROR, "message": "the replica running it stopped"},
        )


@contextlib.contextmanager
def _storing() -> Iterator[None]:
    """An unreachable shared state, as an MCP error rather than a 500.

    Raises:
        MCPError: the store is unavailable.
    """
    try:
        yield
    except StateUnavailableError as exc:
        raise MCPError(types.INTERNAL_ERROR, str(exc)) from exc
