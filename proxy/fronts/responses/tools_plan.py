"""The plan of a Responses request's tools: the client's functions, and the registry tools
its `mcp` entries select (the way OpenAI's hosted MCP tools select a server's tools).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from registry import Tool, ToolRegistry

from ...config import HostedToolConfig, HostedType
from ...errors import BadRequestError
from ...turn.client_tools import ALLOWED_CALLERS, DEFER_LOADING, MARKERS
from ..hosted import Declared, declare, is_responses_search
from .search import (
    CLIENT,
    SEARCH_FUNCTION,
    Held,
    flat_name,
    found_by_server,
    loaded_tools,
    search_function,
)

ALL_TOOLS_LABEL = "toolwire"
"""The `server_label` that selects every registry tool the request may see."""


@dataclass(frozen=True, slots=True)
class McpEntry:
    """One `{"type": "mcp", ...}` tool entry: which registry tools, under which label."""

    label: str
    tools: tuple[Tool, ...]
    must_ask: frozenset[str]
    """Qualified names of the selected tools the client wants to approve each call of."""
    deferred: bool = False
    """`defer_loading`: its tools wait behind a search instead of being offered."""


@dataclass(slots=True)
class ToolsPlan:
    """How a request's `tools` split: the client's functions, and registry selections.

    Not changed once made, though not frozen: one is made per request, and a frozen
    dataclass sets each field through `object.__setattr__` (about four times the cost)."""

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
    client_search: bool = False
    """The client runs the search itself (`execution: "client"`): its search is offered as
    `find_tools`, whose calls go back to it, and what it loads joins the tools."""
    found: frozenset[str] = frozenset()
    """Tools Toolwire's searches found earlier in the conversation (wire names): the
    registry's deferred ones among them are offered from the start."""
    namespace_descriptions: dict[str, str] = field(default_factory=dict)
    """Each `namespace` tool's description, by its name."""
    programs_shown: frozenset[str] = frozenset()
    """The call ids of the conversation's `program` items: a program resumed now that
    pauses again is not shown a second time (its new calls name it as their caller)."""
    web_search: Declared | None = None
    """The hosted web search the client declared, and the registry tool answering it."""
    code_interpreter: bool = False
    """The client declared the hosted `code_interpreter` (code mode answers it)."""

    @property
    def names(self) -> frozenset[str] | None:
        """Qualified names the entries select (and the tool answering a hosted web search);
        None when no entry narrows the registry."""
        if not self.entries:
            return None
        names = {t.qualified_name for e in self.entries for t in e.tools}
        if self.web_search is not None:
            names.add(self.web_search.tool.qualified_name)
        return frozenset(names)

    @property
    def hosted_names(self) -> frozenset[str]:
        """Wire names of the registry tools answering the declared hosted tools: offered
        from the start, deferred or not (the client asked for them)."""
        if self.web_search is None:
            return frozenset()
        return frozenset({self.web_search.wire_name})

    @property
    def deferred(self) -> frozenset[str]:
        """Qualified names of the registry tools that wait behind Toolwire's search: those
        of `defer_loading` entries (unless another entry offers them)."""
        held = {t.qualified_name for e in self.entries if e.deferred for t in e.tools}
        if not held:
            return frozenset()
        offered = {t.qualified_name for e in self.entries if not e.deferred for t in e.tools}
        return frozenset(held - offered)

    @property
    def must_ask(self) -> frozenset[str]:
        return frozenset().union(*(e.must_ask for e in self.entries))

    def label(self, tool: Tool) -> str:
        """The server label a registry tool appears under."""
        for entry in self.entries:
            if tool in entry.tools:
                return entry.label
        return tool.namespace or ALL_TOOLS_LABEL


def plan_tools(
    tools: list[dict[str, Any]] | None,
    registry: ToolRegistry,
    conversation: Sequence[dict[str, Any]] = (),
    hosted: Mapping[HostedType, HostedToolConfig] | None = None,
) -> ToolsPlan:
    """Split the request's tools (and those a client-executed search of the conversation
    loaded); `hosted` maps hosted tool types to the registry tools that answer them.

    Raises:
        BadRequestError: a tool of an unsupported type, an `mcp` entry naming a label no
            source serves, a remote server, or a malformed filter, or a hosted web search
            this proxy does not answer.
    """
    if not tools and _unplanned(conversation):
        return _NO_TOOLS
    planner = _Planner(registry, _search_spec(tools or ()), hosted or {})
    for i, spec in enumerate(tools or ()):
        planner.declared(spec, f"tools[{i}]")
    found: set[str] = set()
    if planner.client_search is not None:
        for spec in loaded_tools(conversation):
            planner.loaded(spec)
    else:
        found = found_by_server(conversation)
        planner.found(found)
    shown = {str(item.get("call_id")) for item in conversation if item.get("type") == "program"}
    return planner.plan(frozenset(found), frozenset(shown))


_NO_TOOLS = ToolsPlan()
"""The plan of a request that declares no tool (shared: a plan is only ever read)."""
_PLANNED = frozenset({"tool_search_output", "program"})
"""The conversation's items that add to a plan."""


def _unplanned(conversation: Sequence[dict[str, Any]]) -> bool:
    """Whether no item of the conversation adds to a plan of no declared tools (a search's
    output, a program shown): it is then the empty plan."""
    for item in conversation:  # noqa: SIM110 (a loop: `all` would make a generator)
        if item.get("type") in _PLANNED:
            return False
    return True


def _name(spec: dict[str, Any], where: str) -> str:
    """A function tool's name.

    Raises:
        BadRequestError: it has none.
    """
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequestError("a function needs a name", param=f"{where}.name")
    return name


def _search_spec(tools: Sequence[dict[str, Any]]) -> tuple[int, dict[str, Any]] | None:
    """The request's `tool_search` tool and its place, if it declared one.

    Raises:
        BadRequestError: it declared two, or one whose execution is neither server nor client.
    """
    found = [(i, spec) for i, spec in enumerate(tools) if spec.get("type") == "tool_search"]
    if len(found) > 1:
        raise BadRequestError("declare one tool_search tool", param=f"tools[{found[1][0]}]")
    for i, spec in found:
        if spec.get("execution", "server") not in ("server", CLIENT):
            raise BadRequestError(
                "execution must be 'server' or 'client'", param=f"tools[{i}].execution"
            )
    return found[0] if found else None


class _Planner:
    """Builds a ToolsPlan from the declared tools, then those a client's search loaded."""

    def __init__(
        self,
        registry: ToolRegistry,
        search: tuple[int, dict[str, Any]] | None,
        hosted: Mapping[HostedType, HostedToolConfig],
    ) -> None:
        self._registry = registry
        self._hosted = hosted
        self._web_search: Declared | None = None
        self._interpreter = False
        self._search = search
        self.client_search = (
            search if search is not None and search[1].get("execution") == CLIENT else None
        )
        self._functions: dict[str, dict[str, Any]] = {}
        self._entries: list[McpEntry] = []
        self._programmatic = False
        self._marks: dict[str, dict[str, Any]] = {}
        self._namespaced: dict[str, tuple[str, str]] = {}
        self._spaces: dict[str, str] = {}
        """Each namespace's description, by its name."""
        self._held: dict[str, Held] = {}
        """What the client's search may load and has not yet, by the name it loads it by."""

    def declared(self, spec: dict[str, Any], where: str) -> None:
        kind = spec.get("type")
        if kind == "function":
            if self.client_search is not None and spec.get(DEFER_LOADING) is True:
                self._hold(_name(spec, where), spec.get("description"))
            else:
                self._function(spec, where)
        elif kind == "namespace":
            functions = _namespace_functions(spec, where)
            self._spaces[spec["name"]] = str(spec.get("description") or "")
            held = [f for f in functions if f.get(DEFER_LOADING) is True]
            if self.client_search is not None and held:
                self._hold(spec["name"], spec.get("description"))
                functions = [f for f in functions if f.get(DEFER_LOADING) is not True]
            for function in functions:
                self._namespace_function(spec["name"], function)
        elif kind in ("programmatic_tool_calling", "code_interpreter", "tool_search"):
            self._answered_by_toolwire(kind)
        elif is_responses_search(kind):
            self._declare_web_search(spec, where)
        elif kind == "mcp":
            deferred = spec.get(DEFER_LOADING) is True
            if deferred and self.client_search is not None:
                label = str(spec.get("server_label"))
                self._hold(label, spec.get("server_description") or f"the tools of {label}")
                # Selects nothing until loaded (the entry still narrows the registry).
                self._entries.append(McpEntry(label, (), frozenset(), deferred=True))
            else:
                entry = _entry(spec, self._registry, where)
                self._entries.append(dataclasses.replace(entry, deferred=deferred))
        else:
            raise BadRequestError(
                f"tools of type {kind!r} are not supported: use function tools, or mcp "
                "entries naming a Toolwire namespace",
                param=f"{where}.type",
            )

    def _answered_by_toolwire(self, kind: str) -> None:
        """A hosted type Toolwire's own machinery answers (`tool_search` is read first, by
        `_search_spec`)."""
        if kind == "programmatic_tool_calling":
            self._programmatic = True
        elif kind == "code_interpreter":
            self._interpreter = True

    def _declare_web_search(self, spec: dict[str, Any], where: str) -> None:
        if self._web_search is not None:
            raise BadRequestError("declare one web_search tool", param=f"{where}.type")
        refused = ("filters.allowed_domains",)
        self._web_search = declare(spec, where, self._hosted, self._registry, refused=refused)

    def loaded(self, spec: dict[str, Any]) -> None:
        """A tool a client's search loaded: offered from now on, deferred or not."""
        spec = {k: v for k, v in spec.items() if k != DEFER_LOADING}
        kind = spec.get("type")
        where = "input.tool_search_output.tools"
        if kind == "function":
            self._held.pop(_name(spec, where), None)
            self._function(spec, where)
        elif kind == "namespace":
            self._held.pop(str(spec.get("name")), None)
            functions = _namespace_functions(spec, where)
            self._spaces[spec["name"]] = str(spec.get("description") or "")
            for function in functions:
                plain = {k: v for k, v in function.items() if k != DEFER_LOADING}
                self._namespace_function(spec["name"], plain)
        elif kind == "mcp":
            entry = _entry(spec, self._registry, where)
            self._held.pop(entry.label, None)
            # It takes the place of the entry held back under its label.
            self._entries = [e for e in self._entries if e.label != entry.label or e.tools]
            self._entries.append(entry)
        else:
            raise BadRequestError(
                f"a tool_search_output may load function, namespace and mcp tools, not {kind!r}",
                param=where,
            )

    def found(self, names: set[str]) -> None:
        """The client's deferred functions Toolwire's searches found earlier in the
        conversation: offered from now on."""
        for name in names & self._marks.keys():
            self._marks[name] = {k: v for k, v in self._marks[name].items() if k != DEFER_LOADING}

    def plan(self, found: frozenset[str], programs_shown: frozenset[str]) -> ToolsPlan:
        """The plan; `found` and `programs_shown` as `ToolsPlan` holds them."""
        functions = list(self._functions.values())
        if self.client_search is not None:
            i, spec = self.client_search
            if SEARCH_FUNCTION in self._functions:
                raise BadRequestError(
                    f"a function named {SEARCH_FUNCTION!r} clashes with the client-executed "
                    "tool_search, which the model is offered under that name; rename it",
                    param=f"tools[{i}]",
                )
            functions.append(search_function(spec, list(self._held.values()), f"tools[{i}]"))
            # The model calls it; a program could not hand a search back as the hosted API does.
            self._marks[SEARCH_FUNCTION] = {ALLOWED_CALLERS: ["direct"]}
        return ToolsPlan(
            functions,
            tuple(self._entries),
            self._programmatic,
            self._marks,
            self._search is not None,
            self._namespaced,
            self.client_search is not None,
            found=found,
            namespace_descriptions=self._spaces,
            programs_shown=programs_shown,
            web_search=self._web_search,
            code_interpreter=self._interpreter,
        )

    def _function(self, spec: dict[str, Any], where: str) -> None:
        name = spec.get("name")
        said = {k: spec[k] for k in MARKERS if k in spec}
        if said and isinstance(name, str):
            self._marks[name] = said
            spec = {k: v for k, v in spec.items() if k not in MARKERS}
        key = name if isinstance(name, str) else f"#{where}"
        self._functions.pop(key, None)  # a loaded definition replaces a declared one
        self._functions[key] = spec

    def _namespace_function(self, namespace: str, function: dict[str, Any]) -> None:
        flat = flat_name(namespace, function["name"])
        self._namespaced[flat] = (namespace, function["name"])
        said = {k: function[k] for k in MARKERS if k in function}
        if said:
            self._marks[flat] = said
        plain = {k: v for k, v in function.items() if k not in MARKERS}
        self._functions.pop(flat, None)
        self._functions[flat] = {**plain, "name": flat}

    def _hold(self, name: str, description: Any) -> None:
        self._held[name] = Held(name, description if isinstance(description, str) else "")


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
