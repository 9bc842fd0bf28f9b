"""What an MCP task is on the wire, and what a request says about tasks: a task record as the
protocol's `Task`, a result inside a task, `tasks/update`'s parameters; a request's dialect,
whether it declares the tasks extension, its `Mcp-Name` header, whether it asks for a task,
and whose key made it. `tasks.py` runs the tasks.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field, ValidationError

from ...server.context import context_of
from ...state.mcp_tasks import McpTaskRecord

EXTENSION = "io.modelcontextprotocol/tasks"
"""The 2026-07-28 tasks extension."""
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
POLL_INTERVAL_MS = 500
"""How often clients are told to poll."""


class UpdateTaskParams(types.RequestParams):
    """`tasks/update`'s parameters (2026-07-28)."""

    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] = Field(default_factory=dict, alias="inputResponses")


def task_json(record: McpTaskRecord, *, modern: bool, detailed: bool = False) -> dict[str, Any]:
    """`record` as a protocol `Task`; `detailed` (2026-07-28 `tasks/get`): with its result
    or error inline."""
    task: dict[str, Any] = {
        "taskId": record.task_id,
        "status": record.status,
        "createdAt": iso(record.created_at),
        "lastUpdatedAt": iso(record.updated_at),
    }
    if record.status_message is not None:
        task["statusMessage"] = record.status_message
    ttl_ms = int(record.ttl_s * 1000)
    if modern:
        task.update(ttlMs=ttl_ms, pollIntervalMs=POLL_INTERVAL_MS)
        if detailed and record.status == "completed" and record.result is not None:
            task["result"] = record.result
        elif detailed and record.status == "failed":
            task["error"] = record.error or {"code": types.INTERNAL_ERROR, "message": "failed"}
    else:
        task.update(ttl=ttl_ms, pollInterval=POLL_INTERVAL_MS)
    return task


def result_wire(result: types.CallToolResult | types.InputRequiredResult) -> dict[str, Any]:
    """A result as every dialect carries it inside a task, and a refusal as a 2025-11-25
    client reads it: without `resultType`."""
    wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    wire.pop("resultType", None)
    return wire


def iso(seconds: float) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def is_modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def declares_extension(params: Mapping[str, Any]) -> bool:
    """Whether a 2026-07-28 request declares the tasks extension in its capabilities."""
    meta = params.get("_meta")
    capabilities = meta.get(CLIENT_CAPABILITIES) if isinstance(meta, Mapping) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, Mapping) else None
    return isinstance(extensions, Mapping) and EXTENSION in extensions


def name_header(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """A 2026-07-28 request's `Mcp-Name` header (decoded), if it has one."""
    if not is_modern(ctx) or ctx.request is None:
        return None
    raw = ctx.request.headers.get(MCP_NAME_HEADER)
    return None if raw is None else (decode_header_value(raw) or "")


def task_request(ctx: ServerRequestContext[Any, Any]) -> types.CallToolRequestParams | None:
    """The parameters of a `tools/call` that asks for a task (2025-11-25: `task` is set)
    or allows one (2026-07-28: the request declares the extension); None for any other.

    Raises:
        MCPError: the parameters are malformed.
    """
    if ctx.method != "tools/call" or not isinstance(ctx.params, Mapping):
        return None
    if is_modern(ctx):
        if not declares_extension(ctx.params):
            return None
    elif ctx.params.get("task") is None or not initialized(ctx):
        return None  # a session mid-handshake gets the SDK's answer
    try:
        return types.CallToolRequestParams.model_validate(ctx.params, by_name=False)
    except ValidationError:
        raise MCPError(types.INVALID_PARAMS, "Invalid request parameters") from None


def initialized(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether a handshake session finished its handshake (else the SDK answers)."""
    connection = getattr(ctx.session, "_connection", None)
    return isinstance(connection, Connection) and connection.initialize_accepted


def owner_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """The name of the key that made the request; empty when authentication is off."""
    if ctx.request is None:
        return ""
    principal = context_of(ctx.request.scope).principal
    return principal.name if principal is not None else ""
