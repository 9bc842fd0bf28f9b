"""The admin API's wire models: what it answers and what it accepts."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .pin_records import PinEntry

MAX_TIMEOUT_S = 86_400.0
"""The longest per-call timeout the admin sets: 24 hours."""
MAX_LOG_OFFSET = 1_000_000_000
"""The furthest a log page may start; far past any log a proxy keeps."""
MAX_REASON = 500
"""Characters of a reason given with an operator's action."""


class KeyDecision(BaseModel):
    """What one configured key gets of a tool."""

    key: str
    """The key's name (`master`, a name from `auth.keys`, or `anonymous` without auth)."""
    visible: bool
    """Injected into that key's requests (in its scope, enabled, not denied outright)."""
    action: Literal["allow", "deny", "ask"] | None
    """The policy's decision for a call without arguments (rules matching arguments can
    still change it); None when the key does not see the tool."""


class ToolSummary(BaseModel):
    """One registered tool, as the tools table lists it."""

    name: str
    """The qualified name, `namespace.name`."""
    wire_name: str
    namespace: str | None
    description: str
    source: str
    tags: list[str]
    enabled: bool
    disabled_reason: str | None
    deferred: bool
    search_hint: str | None
    timeout_s: float | None


class ToolDetail(ToolSummary):
    """One tool with its schema, metadata and the decision each key gets."""

    parameters: dict[str, Any]
    metadata: dict[str, Any]
    decisions: list[KeyDecision]


class ToolList(BaseModel):
    """The tools table."""

    version: int
    """The registry's version: it increases on every change."""
    tools: list[ToolSummary]


class Toggle(BaseModel):
    """Enable or disable a tool."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=MAX_REASON)


class ToolPatch(BaseModel):
    """Metadata to change on a tool; fields left out stay as they are."""

    model_config = ConfigDict(extra="forbid")

    tags: list[str] | None = None
    defer: bool | None = None
    search_hint: str | None = Field(default=None, max_length=1000)
    timeout_s: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    """Seconds, finite, at most `MAX_TIMEOUT_S`: a deadline can be moved, never lifted."""
    description: str | None = Field(default=None, max_length=10_000)


class Source(BaseModel):
    """One configured tool source."""

    name: str
    """Its label, such as `python:examples/tools.py` or `mcp:time`."""
    reachable: bool
    tools: int
    error: str | None
    """The last error: why it failed to start or lost its server; None while it is well."""
    lazy: Literal["stopped", "starting", "running"] | None = None
    """A server started on first use (`lazy: true`): whether it runs now; None: started
    with the proxy."""
    first_use_ms: float | None = None
    """A lazy server: how long its last start took, from the call that started it."""
    login: bool = False
    """Its tokens come from an operator's login (`oauth: {grant: authorization_code}`):
    `POST /admin/api/sources/{name}/login` begins one; the panel offers it while the source
    is not connected."""


class LogRecord(BaseModel):
    """One call (or permission decision) in the execution log."""

    tool: str
    call_id: str
    request_id: str | None
    outcome: str
    """`ok`, an error kind (`timeout`, `tool_error`, ...), or a permission decision that kept
    the call from running (`denied`, `asked`, `refused`)."""
    arguments: Any
    """As the model sent them, secrets redacted, long values abridged."""
    result: str
    duration_ms: float
    started_at: float
    attempts: int
    mode: str | None
    note: str | None


class LogPage(BaseModel):
    """A page of the execution log, newest first."""

    total: int
    """Records matching the filters, over every page."""
    offset: int
    limit: int
    records: list[LogRecord]


class ToolStats(BaseModel):
    """What one tool's kept calls came to."""

    tool: str
    calls: int
    errors: int
    refused: int
    """Permission decisions that kept a call from running (denied, asked, refused)."""
    p50_ms: float | None
    p95_ms: float | None


class Stats(BaseModel):
    """Per-tool figures over the execution log (its last `capacity` records)."""

    capacity: int
    tools: list[ToolStats]


class KeyStats(BaseModel):
    """What one client key did since the proxy started (on this replica)."""

    key: str
    """The key's name (`master`, a name from `auth.keys`, or `anonymous` without auth)."""
    requests: int
    """Authenticated requests on any route (`anonymous` requests are not counted)."""
    tool_calls: int
    """Calls of its that ran, on any path (the loop, `/mcp`)."""
    refused: int
    """Calls of its the gate refused: out of scope, denied, a guard, a rate limit."""


class KeyStatsList(BaseModel):
    """Per-key figures since start."""

    keys: list[KeyStats]


class Approval(BaseModel):
    """A call paused until someone approves it."""

    call_id: str
    tool: str
    arguments: Any
    reason: str
    requested_at: float
    expires_at: float
    decided_by: str | None
    approved: bool | None
    owner: str = ""
    """The client key whose request paused the call (only it can continue the call); empty
    when authentication is off."""


class ApprovalVerdict(BaseModel):
    """An operator's answer to a paused call."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=MAX_REASON)


class ToolState(BaseModel):
    """A tool's state as exported: enabled or not, and the metadata changed here."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    disabled_reason: str | None = None
    metadata: ToolPatch = Field(default_factory=ToolPatch)


class StateDocument(BaseModel):
    """The admin state as JSON: every tool's enabled state and metadata overrides."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["toolwire-admin-state/1"] = "toolwire-admin-state/1"
    tools: dict[str, ToolState]
    pins: list[PinEntry] | None = None
    """Pinned tool definitions (absent: an import leaves the pins as they are)."""


class ImportReport(BaseModel):
    """What an import changed."""

    applied: list[str]
    unknown: list[str]
    """Tools named in the document that this proxy does not have (left alone)."""
