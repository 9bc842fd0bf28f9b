"""`tools/list` and `tools/call` for MCP clients: the caller's toolset, and every call
through the one gate (scope, policy, guards, approval, then execution)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from policies import ANONYMOUS, NO_FILTER, Admission, CallContext, Gate, GateDecision
from registry import ClientHooks, Tool, ToolCall, ToolSpec, offering

from ...config import McpIconConfig, McpTasksConfig
from ...server.context import context_of
from ...turn.catalog import Catalog
from ...turn.questions import Questions
from .content import call_result, icons_for, mcp_tool, runs_as_task
from .elicitation import Approvals
from .forwarding import ClientAsker, HeldCalls

PAGE_SIZE = 100
"""Tools per `tools/list` page."""
JSON_SCHEMA_2020_12_SINCE = "2025-11-25"
"""The first protocol version whose clients read JSON Schema 2020-12 (`$ref`, `$defs`)."""


@dataclass(frozen=True, slots=True)
class Admitted:
    """A call the gate let through (approved, where it asked), ready to run."""

    tool: Tool
    admission: Admission
    caller: CallContext


class McpTools:
    """The registry's tools as one MCP caller may see and run them.

    The caller is the key that authenticated each HTTP request, read from that request's
    scope (where the edge put it), never from the MCP session: a session's later
    requests are judged by their own key.
    """

    def __init__(
        self,
        catalog: Catalog,
        gate: Gate,
        *,
        authenticated: bool,
        approvals: Approvals,
        tasks: McpTasksConfig | None = None,
        icons: Mapping[str, Sequence[McpIconConfig]] | None = None,
        page_size: int = PAGE_SIZE,
        questions: Questions | None = None,
    ) -> None:
        self._catalog = catalog
        self._gate = gate
        self._authenticated = authenticated
        self._approvals = approvals
        self._page_size = page_size
        self._tasks = tasks
        self._icons = icons or {}
        self._held = HeldCalls(questions) if questions is not None else None

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """One page of the tools the caller may see, deferred ones included.

        Raises:
            MCPError: the cursor is not one this server gave, or the caller is unknown.
        """
        toolset = self._catalog.toolset(NO_FILTER, self._caller(ctx))
        # By name: the same list, and the same pages, on every replica and after a restart.
        names = sorted(toolset.by_wire_name)
        keep_refs = ctx.protocol_version >= JSON_SCHEMA_2020_12_SINCE
        start = _offset(params.cursor if params is not None else None, len(names))
        page = names[start : start + self._page_size]
        end = start + len(page)
        shown = {spec.name: spec for spec in toolset.specs}
        shown.update(toolset.deferred_specs)
        return types.ListToolsResult(
            tools=[
                self._definition(toolset.by_wire_name[name], shown[name], keep_refs)
                for name in page
            ],
            next_cursor=str(end) if end < len(names) else None,
        )

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Run one call through the gate; refusals and failures are `isError` results.

        Raises:
            MCPError: see `admit`.
        """
        held = self._held
        if held is not None and held.answers(params):
            return await held.resume(self._caller(ctx).caller or "", params)
        admitted = await self.admit(ctx, params)
        if not isinstance(admitted, Admitted):
            return admitted
        if held is not None and held.holds(ctx):
            caller = admitted.caller
            work = functools.partial(self._gate.run, [admitted.admission], caller)
            return await held.run(caller.caller or "", work, admitted.admission.call.id)
        # An MCP source's question during the call is asked of this client in turn.
        owner, asker = admitted.caller.caller or "", ClientAsker(ctx)
        hooks = held.offered(owner, asker) if held is not None else ClientHooks(asker, who=owner)
        with offering(hooks):
            return await self.run(admitted)

    async def admit(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> Admitted | types.CallToolResult | types.InputRequiredResult:
        """The call admitted to run, or the result that ends it before it runs: a refusal,
        or (to a 2026-07-28 client) the approval question as an `input_required` result.

        An `ask` call is admitted only once the client approved it (see `Approvals`).

        Raises:
            MCPError: no tool of that name exists for the caller (`INVALID_PARAMS`), or the
                caller is unknown.
        """
        caller = self._caller(ctx)
        tool = self._find(caller, params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name!r}")
        call = ToolCall(f"mcp_{ctx.request_id}", params.name, dict(params.arguments or {}))
        admission = await self._gate.admit(tool, call, caller)
        if admission.verdict is GateDecision.ASK:
            await self._gate.ask(admission, caller)
            approvals = self._approvals
            if approvals.round_trip(ctx) and params.request_state is None:
                return approvals.question(ctx, tool, call, admission.reason)
            refusal = await approvals.answer(ctx, params, tool, call, admission.reason)
            if refusal is not None:
                return call_result(refusal)
            admission = await self._gate.admit(tool, call, caller, approved=True)
        return Admitted(tool, admission, caller)

    async def run(self, admitted: Admitted) -> types.CallToolResult:
        """Run an admitted call under its caller's key (the gate refuses what it must)."""
        (result,) = await self._gate.run([admitted.admission], admitted.caller)
        return call_result(result)

    def _definition(self, tool: Tool, spec: ToolSpec, keep_refs: bool) -> types.Tool:
        task = self._tasks is not None and runs_as_task(tool, self._tasks)
        icons = icons_for(tool, self._icons)
        return mcp_tool(tool, spec, task=task, icons=icons, keep_refs=keep_refs)

    def find(self, ctx: ServerRequestContext[Any, Any], name: str) -> Tool | None:
        """The tool the caller calls by `name`, denied ones included; None when none.

        Raises:
            MCPError: the caller is unknown.
        """
        return self._find(self._caller(ctx), name)

    def _find(self, caller: CallContext, name: str) -> Tool | None:
        toolset = self._catalog.toolset(NO_FILTER, caller)
        # A denied tool still goes to the gate, which logs the denial and gives its reason.
        return toolset.by_wire_name.get(name) or toolset.denied.get(name)

    def _caller(self, ctx: ServerRequestContext[Any, Any]) -> CallContext:
        """The request's caller, as the edge authenticated it.

        Raises:
            MCPError: authentication is on and the message came with no HTTP request.
        """
        request = ctx.request
        if request is None:
            if self._authenticated:
                raise MCPError(types.INVALID_REQUEST, "no authenticated caller")
            return ANONYMOUS
        return context_of(request.scope).caller()


def _offset(cursor: str | None, total: int) -> int:
    """Where a `tools/list` cursor starts.

    Raises:
        MCPError: the cursor is not a position in the list (`INVALID_PARAMS`).
    """
    if cursor is None:
        return 0
    if not cursor.isdigit() or int(cursor) > total:
        raise MCPError(types.INVALID_PARAMS, f"invalid cursor: {cursor!r}")
    return int(cursor)
