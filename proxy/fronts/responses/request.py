"""A Responses API request, checked, and the plan the front follows to serve it.

The request becomes a Chat body for the loop (through llm-rosetta); its `mcp` tool entries
select registry tools the way OpenAI's hosted MCP tools select a server's tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from registry import Tool, ToolRegistry

from ...errors import BadRequestError
from ...turn.client_tools import MARKERS
from ..validation import field_path

ALL_TOOLS_LABEL = "toolwire"
"""The `server_label` that selects every registry tool the request may see."""


class ResponsesBody(BaseModel):
    """The fields of `POST /v1/responses` the proxy reads; the rest are kept, not used."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    input: Any = Field()
    """A string or a list of items: checked by `input_items`."""
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: Literal["auto", "none", "required"] | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    text: dict[str, Any] | None = None
    reasoning: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None
    store: bool | None = True
    stream: bool | None = False
    user: str | None = None
    previous_response_id: str | None = None
    toolwire: dict[str, Any] | None = None


def parse_body(raw: Any) -> ResponsesBody:
    """The request body, checked.

    Raises:
        BadRequestError: a field is missing or of the wrong type (the path in `param`).
    """
    if not isinstance(raw, dict):
        raise BadRequestError("the request body must be a JSON object")
    try:
        return ResponsesBody.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = field_path(first["loc"])
        reason = "required" if first["type"] == "missing" else first["msg"]
        raise BadRequestError(f"{where}: {reason}", param=where or None) from exc


@dataclass(frozen=True, slots=True)
class McpEntry:
    """One `{"type": "mcp", ...}` tool entry: which registry tools, under which label."""

    label: str
    tools: tuple[Tool, ...]
    must_ask: frozenset[str]
    """Qualified names of the selected tools the client wants to approve each call of."""


@dataclass(frozen=True, slots=True)
class ToolsPlan:
    """How a request's `tools` split: the client's functions, and registry selections."""

    functions: list[dict[str, Any]] = field(default_factory=list)
    entries: tuple[McpEntry, ...] = ()
    programmatic: bool = False
    """The client asked for programmatic tool calling (code mode answers it)."""
    marks: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What function tools say of themselves (`allowed_callers`, `defer_loading`), by name."""
    tool_search: bool = False
    """The client declared the hosted `tool_search` tool (Toolwire's own answers it)."""
    namespaced: dict[str, tuple[str, str]] = field(default_factory=dict)
    """The functions of `namespace` tools, by the flat name the loop knows them under:
    (namespace, name)."""

    @property
    def names(self) -> frozenset[str] | None:
        """Qualified names the entries select; None when no entry narrows the registry."""
        if not self.entries:
            return None
        return frozenset(t.qualified_name for e in self.entries for t in e.tools)

    @property
    def must_ask(self) -> frozenset[str]:
        return frozenset().union(*(e.must_ask for e in self.entries))

    def label(self, tool: Tool) -> str:
        """The server label a registry tool appears under."""
        for entry in self.entries:
            if tool in entry.tools:
                return entry.label
        return tool.namespace or ALL_TOOLS_LABEL


def plan_tools(tools: list[dict[str, Any]] | None, registry: ToolRegistry) -> ToolsPlan:
    """Split the request's tools.

    Raises:
        BadRequestError: a tool of an unsupported type, or an `mcp` entry naming a label no
            source serves, a remote server, or a malformed filter.
    """
    functions: list[dict[str, Any]] = []
    entries: list[McpEntry] = []
    programmatic = tool_search = False
    marks: dict[str, dict[str, Any]] = {}
    namespaced: dict[str, tuple[str, str]] = {}
    for i, spec in enumerate(tools or ()):
        kind = spec.get("type")
        if kind == "function":
            said = {k: spec[k] for k in MARKERS if k in spec}
            if said and isinstance(spec.get("name"), str):
                marks[spec["name"]] = said
                spec = {k: v for k, v in spec.items() if k not in MARKERS}
            functions.append(spec)
        elif kind == "namespace":
            for function in _namespace_functions(spec, f"tools[{i}]"):
                flat = flat_name(spec["name"], function["name"])
                namespaced[flat] = (spec["name"], function["name"])
                said = {k: function[k] for k in MARKERS if k in function}
                if said:
                    marks[flat] = said
                plain = {k: v for k, v in function.items() if k not in MARKERS}
                functions.append({**plain, "name": flat})
        elif kind == "programmatic_tool_calling":
            programmatic = True
        elif kind == "tool_search":
            tool_search = True
            if spec.get("execution", "server") != "server":
                raise BadRequestError(
                    "tool_search executed by the client is not supported: Toolwire runs it "
                    "(omit execution, or set it to server)",
                    param=f"tools[{i}].execution",
                )
        elif kind == "mcp":
            entries.append(_entry(spec, registry, f"tools[{i}]"))
        else:
            raise BadRequestError(
                f"tools of type {kind!r} are not supported: use function tools, or mcp "
                "entries naming a Toolwire namespace",
                param=f"tools[{i}].type",
            )
    return ToolsPlan(functions, tuple(entries), programmatic, marks, tool_search, namespaced)


def flat_name(namespace: str, name: str) -> str:
    """A namespaced function's name as the loop and the upstream know it."""
    return f"{namespace}__{name}"


def _namespace_functions(spec: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """A `namespace` tool's function tools, checked.

    Raises:
        BadRequestError: the namespace has no name, or holds no list of function tools.
    """
    name, tools = spec.get("name"), spec.get("tools")
    if not isinstance(name, str) or not name:
        raise BadRequestError("a namespace needs a name", param=f"{where}.name")
    if not isinstance(tools, list):
        raise BadRequestError("a namespace's tools must be an array", param=f"{where}.tools")
    functions = []
    for j, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise BadRequestError(
                "a namespace holds function tools only", param=f"{where}.tools[{j}].type"
            )
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise BadRequestError("a function needs a name", param=f"{where}.tools[{j}].name")
        functions.append(tool)
    return functions


def _entry(spec: dict[str, Any], registry: ToolRegistry, where: str) -> McpEntry:
    label = spec.get("server_label")
    if not isinstance(label, str) or not label:
        raise BadRequestError("'server_label' is required", param=f"{where}.server_label")
    for remote in ("server_url", "connector_id", "tunnel_id"):
        if spec.get(remote):
            raise BadRequestError(
                f"'{remote}' is not supported: Toolwire serves the tool sources of its "
                "configuration; name one by its namespace in 'server_label'",
                param=f"{where}.{remote}",
            )
    namespaces = None if label == ALL_TOOLS_LABEL else {label}
    tools = registry.list_tools(namespaces=namespaces)
    if not tools and label != ALL_TOOLS_LABEL:
        raise BadRequestError(
            f"no tool source has the namespace {label!r}", param=f"{where}.server_label"
        )
    allowed = _names(spec.get("allowed_tools"), f"{where}.allowed_tools")
    if allowed is not None:
        tools = [t for t in tools if _named(t, registry, allowed[0]) or _read_only(t, allowed)]
    return McpEntry(label, tuple(tools), _must_ask(spec.get("require_approval"), tools, registry))


def _names(raw: Any, where: str) -> tuple[frozenset[str], bool] | None:
    """A tool filter (names, read_only) in either of its forms; None when absent."""
    if raw is None:
        return None
    if isinstance(raw, list) and all(isinstance(n, str) for n in raw):
        return frozenset(raw), False
    if isinstance(raw, dict):
        names = raw.get("tool_names") or []
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            return frozenset(names), raw.get("read_only") is True
    raise BadRequestError(
        "must be a list of tool names or {'tool_names': [...], 'read_only': bool}", param=where
    )


def _named(tool: Tool, registry: ToolRegistry, names: frozenset[str]) -> bool:
    return bool({tool.name, tool.qualified_name, registry.wire_name(tool)} & names)


def _read_only(tool: Tool, found: tuple[frozenset[str], bool]) -> bool:
    return found[1] and "read_only" in tool.metadata.tags


def _must_ask(raw: Any, tools: list[Tool], registry: ToolRegistry) -> frozenset[str]:
    """Tools whose calls the client approves: OpenAI's default is every one of them."""
    everyone = frozenset(t.qualified_name for t in tools)
    if raw is None or raw == "always":
        return everyone
    if raw == "never":
        return frozenset()
    if not isinstance(raw, dict):
        raise BadRequestError(
            "must be 'always', 'never' or {'always': {...}, 'never': {...}}",
            param="require_approval",
        )
    always = _names(raw.get("always"), "require_approval.always")
    never = _names(raw.get("never"), "require_approval.never")
    asked = set()
    for tool in tools:
        forced = always is not None and (
            _named(tool, registry, always[0]) or _read_only(tool, always)
        )
        skipped = never is not None and (
            _named(tool, registry, never[0]) or _read_only(tool, never)
        )
        if forced or not skipped:
            asked.add(tool.qualified_name)
    return frozenset(asked)


Status = Literal["completed", "incomplete", "failed", "in_progress"]
