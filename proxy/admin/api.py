"""The admin REST API under `/admin/api/`: tools, sources, the log, approvals, state, events."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any

import orjson
import pydantic_core
from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import Response
from sse_starlette import EventSourceResponse, ServerSentEvent

from registry import SourceStatus

from .models import (
    MAX_LOG_OFFSET,
    Approval,
    ApprovalVerdict,
    ImportReport,
    KeyStatsList,
    LogPage,
    Source,
    StateDocument,
    Stats,
    Toggle,
    ToolDetail,
    ToolList,
    ToolPatch,
    ToolSummary,
)
from .pin_records import export_pins, import_pins
from .records import LogQuery, key_stats, log_page, stats
from .routes import ERRORS, AdminRoute
from .runtime import AdminRuntime
from .tools import ToolQuery

_PING_S = 15
log = logging.getLogger("toolwire.admin")


def runtime_of(request: Request) -> AdminRuntime:
    """The admin's objects, which exist while the proxy serves.

    Raises:
        HTTPException: 503 before start-up has finished.
    """
    runtime: AdminRuntime | None = getattr(request.app.state, "admin", None)
    if runtime is None:
        raise HTTPException(503, "the proxy is not ready")
    return runtime


def caller_of(request: Request, runtime: Annotated[AdminRuntime, Depends(runtime_of)]) -> str:
    """Who is asking; see `AdminAuth.caller` for the refusals."""
    return runtime.auth.caller(request)


Runtime = Annotated[AdminRuntime, Depends(runtime_of)]
Caller = Annotated[str, Depends(caller_of)]
router = APIRouter(
    prefix="/api", dependencies=[Depends(caller_of)], route_class=AdminRoute, responses=ERRORS
)


@router.get("/whoami")
async def whoami(caller: Caller) -> dict[str, str]:
    """The name the key acts under (`admin`, the master key's name, or `local`)."""
    return {"caller": caller}


@router.get("/tools", response_model=ToolList)
async def list_tools(
    request: Request,
    runtime: Runtime,
    namespace: str | None = None,
    tag: str | None = None,
    source: str | None = None,
    enabled: bool | None = None,
    deferred: bool | None = None,
    search: str | None = None,
) -> Response:
    """Registered tools, filtered; `ETag` / `If-None-Match` spare an unchanged list."""
    query = ToolQuery(namespace, tag, source, enabled, deferred, search)
    tools = runtime.desk.list(query)
    return etagged(request, ToolList(version=runtime.services.registry.version, tools=tools))


@router.get("/tools/{name}")
async def get_tool(name: str, runtime: Runtime) -> ToolDetail:
    """One tool: schema, metadata, and what each configured key gets of it."""
    return await runtime.desk.detail(name)


@router.post("/tools/{name}/enable")
async def enable_tool(
    name: str, runtime: Runtime, caller: Caller, body: Toggle | None = None
) -> ToolSummary:
    """Enable a tool; requests see it from their next turn."""
    reason = body.reason if body is not None else ""
    return runtime.desk.toggle(name, enabled=True, reason=reason, by=caller)


@router.post("/tools/{name}/disable")
async def disable_tool(
    name: str, runtime: Runtime, caller: Caller, body: Toggle | None = None
) -> ToolSummary:
    """Disable a tool with a reason: it is no longer injected or run."""
    reason = body.reason if body is not None else ""
    return runtime.desk.toggle(name, enabled=False, reason=reason, by=caller)


@router.patch("/tools/{name}")
async def patch_tool(name: str, patch: ToolPatch, runtime: Runtime, caller: Caller) -> ToolSummary:
    """Change tags, defer, search_hint, timeout_s or description now (until a restart). The
    configured tags stay, and added tags may not make any caller's policy decision less
    strict than the configured ones make it (409)."""
    return runtime.desk.patch(name, patch, by=caller)


@router.patch("/namespaces/{namespace}")
async def patch_namespace(
    namespace: str, patch: ToolPatch, runtime: Runtime, caller: Caller
) -> list[ToolSummary]:
    """Change tags, defer, search_hint, timeout_s or description of every tool of a namespace
    now (until a restart); all or none, with the tool PATCH's rules on tags."""
    return list(runtime.desk.patch_namespace(namespace, patch, by=caller))


@router.get("/sources", response_model=list[Source])
async def list_sources(request: Request, runtime: Runtime) -> Response:
    """Each configured source: reachable or not, its tool count, its last error."""
    sources = [_source(s) for s in runtime.services.sources.statuses()]
    return etagged(request, sources)


@router.post("/sources/{name:path}/reload")
async def reload_source(name: str, runtime: Runtime, caller: Caller) -> Source:
    """Close a source, drop its tools and start it again from its configuration entry; a
    failed start shows in `error` (the source's tools are then gone until the next reload).
    Tools disabled here stay disabled."""
    services = runtime.services
    status = _source(await services.sources.reload(name, services.registry))
    log.info("admin: %s reloaded source %s: %s", caller, name, status.error or "ok")
    runtime.hub.publish("source", {**status.model_dump(), "by": caller})
    return status


@router.get("/log", response_model=LogPage)
async def read_log(
    request: Request,
    runtime: Runtime,
    tool: str | None = None,
    outcome: str | None = None,
    request_id: str | None = None,
    since: Annotated[float | None, Query(allow_inf_nan=False)] = None,
    until: Annotated[float | None, Query(allow_inf_nan=False)] = None,
    offset: Annotated[int, Query(ge=0, le=MAX_LOG_OFFSET)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> Response:
    """The execution log, newest first; `outcome` is `ok`, `error` or one outcome;
    `since` and `until` are epoch seconds."""
    query = LogQuery(tool, outcome, request_id, since, until)
    records = runtime.services.gate.log.records()
    return etagged(request, log_page(records, query, offset=offset, limit=limit))


@router.get("/stats", response_model=Stats)
async def read_stats(request: Request, runtime: Runtime) -> Response:
    """Per tool: calls, errors, refusals and p50/p95 latency over the kept log."""
    log = runtime.services.gate.log
    return etagged(request, stats(log.records(), log.capacity))


@router.get("/stats/keys", response_model=KeyStatsList)
async def read_key_stats(request: Request, runtime: Runtime) -> Response:
    """Per client key since start: requests, tool calls that ran, calls the gate refused."""
    services = runtime.services
    requests = services.keys.requests_by_key() if services.keys is not None else {}
    figures = key_stats(runtime.desk.callers, requests, services.gate.calls_by_key())
    return etagged(request, figures)


@router.get("/approvals", response_model=list[Approval])
async def list_approvals(request: Request, runtime: Runtime) -> Response:
    """Calls paused for approval across replicas when the state is shared, oldest first."""
    pending = await runtime.queue.pending()
    return etagged(request, [Approval(**_fields(a)) for a in pending])


@router.post("/approvals/{call_id}/approve")
async def approve(
    call_id: str, runtime: Runtime, caller: Caller, body: ApprovalVerdict | None = None
) -> Approval:
    """Approve a paused call: it runs when its client continues the conversation."""
    return await _decide(runtime, call_id, True, body, caller)


@router.post("/approvals/{call_id}/deny")
async def deny(
    call_id: str, runtime: Runtime, caller: Caller, body: ApprovalVerdict | None = None
) -> Approval:
    """Refuse a paused call: its client's continuation gets the refusal."""
    return await _decide(runtime, call_id, False, body, caller)


@router.get("/state", response_model_exclude_unset=True)
async def export_state(runtime: Runtime) -> StateDocument:
    """Every tool's enabled state, the metadata changed here and the pinned tool
    definitions, to import later."""
    document = runtime.desk.export()
    pins = await export_pins(runtime)
    return document if pins is None else document.model_copy(update={"pins": pins})


@router.post("/state")
async def import_state(document: StateDocument, runtime: Runtime, caller: Caller) -> ImportReport:
    """Apply an exported state to the tools this proxy has; its pins, when it has them,
    replace the pins kept (on every replica sharing the state)."""
    report = runtime.desk.load(document, by=caller)
    if document.pins is not None:
        await import_pins(runtime, document.pins)
    return report


@router.get("/events", response_class=EventSourceResponse)
async def events(runtime: Runtime) -> EventSourceResponse:
    """Server-sent events: `ready` first, then `registry` (a change and its version),
    `tool` (an operator's change to a tool), `namespace` (to a namespace), `source` (a
    reload's outcome), `approval` (an operator's verdict), `call` (a finished call) and
    `permission` (a gate decision that kept a call from running)."""
    version = runtime.services.registry.version
    return EventSourceResponse(_sse(runtime, {"version": version}), ping=_PING_S)


async def _sse(runtime: AdminRuntime, first: dict[str, Any]) -> AsyncIterator[ServerSentEvent]:
    async for name, data in runtime.hub.stream(("ready", first)):
        yield ServerSentEvent(orjson.dumps(data).decode(), event=name)


async def _decide(
    runtime: AdminRuntime, call_id: str, approved: bool, body: ApprovalVerdict | None, by: str
) -> Approval:
    reason = body.reason if body is not None else ""
    decided = await runtime.queue.decide(call_id, approved=approved, reason=reason, by=by)
    runtime.hub.publish("approval", {"call_id": call_id, "approved": approved, "by": by})
    return Approval(**_fields(decided))


def _source(status: SourceStatus) -> Source:
    first_use = status.first_use_s
    return Source(
        name=status.name,
        reachable=status.reachable,
        tools=status.tool_count,
        error=status.error,
        lazy=status.lazy,
        first_use_ms=None if first_use is None else round(first_use * 1000, 1),
        login=status.login,
    )


def _fields(approval: Any) -> dict[str, Any]:
    return {name: getattr(approval, name) for name in Approval.model_fields}


def etagged(request: Request, payload: Any) -> Response:
    """`payload` as JSON with an `ETag`; 304 when the client's `If-None-Match` has it."""
    body = pydantic_core.to_json(payload)
    tag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    headers = {"etag": tag, "cache-control": "no-cache"}
    wanted = request.headers.get("if-none-match", "")
    if wanted.strip() == "*" or tag in (t.strip().removeprefix("W/") for t in wanted.split(",")):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)
