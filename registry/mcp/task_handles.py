"""Tool calls answered with a task handle (MCP 2026-07-28's tasks extension), followed to
their end.

On a 2026-07-28 session Toolwire declares the `io.modelcontextprotocol/tasks` extension, and
the server decides, call by call, whether to answer a `tools/call` with a task handle
(`resultType: "task"`) instead of its result. Such an answer is followed by `settled`,
which polls `tasks/get` every `pollIntervalMs` (the result comes inline once the task has
ended), reports each new status to the call's reporter, and returns the tool's result. A
call abandoned before the task ends (a timeout, a cancelled turn) cancels it (`tasks/cancel`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import ClientSession, MCPError
from mcp.client.extension import ClaimContext, ResultClaim, UnexpectedClaimedResult
from mcp.shared.inbound import MCP_NAME_HEADER
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from registry.mcp.errors import McpCallError
from registry.mcp.progress import CallReporter
from registry.mcp.tasks import (
    CANCEL_TIMEOUT_S,
    DEFAULT_POLL_S,
    MAX_POLL_S,
    MIN_POLL_S,
    REQUEST_TIMEOUT_S,
    send_raw,
)

__all__ = ["EXTENSION", "TaskHandle", "TaskHandles"]

log = logging.getLogger("toolwire.mcp")

EXTENSION = "io.modelcontextprotocol/tasks"
HANDLE_WAIT_S = 2.0
"""How long a call given up by its caller still waits for its answer, in case it is a task
handle to cancel (2026-07-28 sessions only)."""
_TERMINAL = frozenset({"completed", "failed", "cancelled"})


class TaskHandle(types.Result):
    """A `tools/call` answered with a task (`resultType: "task"`)."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None


class TaskHandles:
    """The tasks extension of one server's sessions: what the session declares, and how a
    task handle becomes the call's result."""

    def __init__(self, label: str) -> None:
        self._label = label

    def extensions(self) -> dict[str, dict[str, Any]]:
        """The session's `extensions` (declared on 2026-07-28 requests only)."""
        return {EXTENSION: {}}

    def claims(self) -> dict[str, list[ResultClaim[Any]]]:
        """The session's `result_claims`: a task handle is followed to its result."""
        claim = ResultClaim(result_type="task", model=TaskHandle, resolve=self._resolve)
        return {EXTENSION: [claim]}

    async def settled(
        self,
        session: ClientSession,
        call: Awaitable[types.CallToolResult],
        reporter: CallReporter | None,
    ) -> types.CallToolResult:
        """The result of `call` (a `tools/call`), a task handle followed to its end.

        Raises:
            McpCallError: the task failed or was cancelled by the server.
            MCPError: a `tasks/get` failed.
        """
        if session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return await call  # no task handles before 2026-07-28
        answering = asyncio.ensure_future(call)
        try:
            return await asyncio.shield(answering)
        except UnexpectedClaimedResult as exc:
            if not isinstance(exc.result, TaskHandle):
                raise
            return await self._follow(session, exc.result, reporter)
        except asyncio.CancelledError:
            await self._abandon(session, answering)
            raise

    async def _abandon(self, session: ClientSession, answering: asyncio.Future[Any]) -> None:
        """A call given up while its answer was on its way: a task handle that still comes
        (within `HANDLE_WAIT_S`) is cancelled; past that the call itself is."""
        try:
            async with asyncio.timeout(HANDLE_WAIT_S):
                await answering
        except UnexpectedClaimedResult as exc:
            if isinstance(exc.result, TaskHandle):
                await self._cancel(session, exc.result.task_id)
        except Exception:
            return  # a plain answer's failure, or no answer in time: nothing runs for us
        finally:
            if not answering.done():
                answering.cancel()

    async def _resolve(self, handle: TaskHandle, context: ClaimContext) -> types.CallToolResult:
        """The claim's resolver, for sessions that resolve claims themselves."""
        return await self._follow(context.session, handle, None)

    async def _follow(
        self, session: ClientSession, handle: TaskHandle, reporter: CallReporter | None
    ) -> types.CallToolResult:
        task_id = handle.task_id
        state: dict[str, Any] = {"status": handle.status, "pollIntervalMs": handle.poll_interval_ms}
        shown: tuple[Any, Any] = (handle.status, handle.status_message)
        try:
            while state.get("status") not in _TERMINAL:
                interval = (state.get("pollIntervalMs") or DEFAULT_POLL_S * 1000) / 1000
                await anyio.sleep(min(max(interval, MIN_POLL_S), MAX_POLL_S))
                state = await _request(session, "tasks/get", task_id, REQUEST_TIMEOUT_S)
                now = (state.get("status"), state.get("statusMessage"))
                if now != shown and reporter is not None:
                    reporter.status(str(now[0]), now[1] if isinstance(now[1], str) else None)
                shown = now
        except BaseException:
            await self._cancel(session, task_id)
            raise
        return _outcome(state)

    async def _cancel(self, session: ClientSession, task_id: str) -> None:
        """Cancel an abandoned task, whatever cancels the caller meanwhile (bounded)."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_TIMEOUT_S):
            try:
                await _request(session, "tasks/cancel", task_id, CANCEL_TIMEOUT_S)
            except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                log.warning(
                    "MCP server %s: cancelling task %s failed: %s", self._label, task_id, exc
                )
            else:
                log.info("MCP server %s: cancelled task %s", self._label, task_id)


def _outcome(state: dict[str, Any]) -> types.CallToolResult:
    """The tool's result from a task that ended.

    Raises:
        McpCallError: the task failed (a JSON-RPC error) or was cancelled.
    """
    status = state.get("status")
    if status == "completed":
        return types.CallToolResult.model_validate(state.get("result") or {}, by_name=False)
    if status == "failed":
        error = state.get("error")
        reason = error.get("message") if isinstance(error, dict) else None
        raise McpCallError(
            f"the task failed: {reason or state.get('statusMessage') or 'no reason given'}"
        )
    message = state.get("statusMessage")
    raise McpCallError(f"the server cancelled the task{f': {message}' if message else ''}")


async def _request(
    session: ClientSession, method: str, task_id: str, limit_s: float
) -> dict[str, Any]:
    """A `tasks/*` request, routed by its task id (`Mcp-Name`, as the extension asks)."""
    return await send_raw(
        session, method, {"taskId": task_id}, limit_s=limit_s, headers={MCP_NAME_HEADER: task_id}
    )
