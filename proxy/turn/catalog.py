"""The tools one request shows the model: registry tools the policy and filters allow.

Specs come precomputed from the registry and are rendered in Chat's shape (the loop's
pivot) when a toolset is built; toolsets are cached per filter, caller and registry
version, so a request does no schema work.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from policies import ANONYMOUS, CallContext, Gate, Principal, ToolFilter
from registry import Tool, ToolIndex, ToolRegistry, ToolSpec

from ..errors import BadRequestError
from ..upstreams.base import ChatTool, ChatTools

SEARCH_TOOL = "tool_search"
"""The tool injected when deferred tools are visible (the README's "How the loop behaves",
**Deferred tools**)."""

SEARCH_SPEC = ToolSpec(
    SEARCH_TOOL,
    "Search the catalog of additional tools by what they do. Matching tools become "
    "callable from your next step on.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "words describing the task"},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 20,
                "description": "most tools to return (default 5)",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)


def chat_tool(spec: ToolSpec) -> dict[str, Any]:
    """A spec as a Chat function tool, the shape the loop sends upstream."""
    function = {"name": spec.name, "description": spec.description, "parameters": spec.parameters}
    return {"type": "function", "function": function}


SEARCH_CHAT_TOOL = ChatTool(chat_tool(SEARCH_SPEC))
"""`tool_search` as the loop injects it, after every other tool."""


@dataclass(frozen=True, slots=True)
class DeferredTools:
    """The deferred tools one request may find: a view on the catalog's one index."""

    index: ToolIndex
    allowed: frozenset[int]
    """Index positions of the deferred tools this request sees."""
    wire_names: Mapping[str, str]
    """Wire name of each, by qualified name."""

    def search(self, query: str, *, limit: int = 5) -> list[Tool]:
        return self.index.search(query, limit=limit, allowed=self.allowed)

    def __len__(self) -> int:
        return len(self.allowed)


@dataclass(frozen=True, slots=True)
class Toolset:
    """The registry tools visible to one request."""

    specs: tuple[ToolSpec, ...]
    """Injected from the first call: the visible tools that are not deferred."""
    chat_tools: tuple[dict[str, Any], ...]
    """`specs` in Chat's shape, as the loop injects them."""
    by_wire_name: Mapping[str, Tool]
    """Every visible tool, deferred ones included (a call to any of them may run)."""
    deferred: DeferredTools | None = None
    """Search over the visible deferred tools; None when there are none."""
    deferred_specs: Mapping[str, ToolSpec] = field(default_factory=dict)
    """The visible deferred tools by wire name."""
    deferred_chat_tools: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    """The same in Chat's shape, as the loop loads them once `tool_search` finds them."""
    denied: Mapping[str, Tool] = field(default_factory=dict)
    """Tools the request's filters select but the policy denies, by wire name: never shown
    or run, but a call to one is answered with the denial's reason, not "unknown tool"."""
    offered: ChatTools = field(init=False, repr=False, compare=False)
    """`chat_tools` as the loop offers them when it adds none, with their JSON made once
    (`ChatTools`): made with the toolset, so whatever makes another toolset (a registry
    change, another filter, caller or deferral, a tool added) makes it again."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "offered", ChatTools(self.chat_tools))


_Key = tuple[int, ToolFilter, str | None, frozenset[str], frozenset[str]]
"""A cached toolset's key: registry version, filter, caller, tools deferred and loaded."""


class Catalog:
    """Selects and caches visible toolsets."""

    def __init__(self, registry: ToolRegistry, gate: Gate, *, cache_size: int = 256) -> None:
        self._registry = registry
        self._gate = gate
        self._cache: OrderedDict[_Key, Toolset] = OrderedDict()
        self._cache_size = cache_size
        self._index: tuple[int, ToolIndex] | None = None
        self._last: tuple[ToolFilter, Principal | None, int, Toolset] | None = None
        """The last toolset asked for without `defer` or `load`, by its filter and caller's
        principal (the same objects: most requests share the default filter, and a key's
        principal is made once) and the registry version."""
        self._chat_tools: tuple[int, dict[str, ChatTool]] = (-1, {})
        """The registry's Chat schemas with their JSON (`ChatTool`), by qualified name, for
        one registry version: shared by every toolset of that version."""

    def toolset(
        self,
        tool_filter: ToolFilter,
        caller: CallContext = ANONYMOUS,
        defer: frozenset[str] = frozenset(),
        load: frozenset[str] = frozenset(),
    ) -> Toolset:
        """The tools `tool_filter` lets a caller's request see (deferred and denied tools
        excluded; tools outside the caller's key scope do not exist for it); `defer` names
        more tools (qualified names) the request defers behind the search, `load` deferred
        tools (wire names) its conversation's searches already found, offered from the start."""
        # `defer` and `load` are not keyword-only: Python 3.11 specializes no call to a
        # function with keyword-only parameters, and every request calls this one.
        version = self._registry.version
        last = self._last
        if (
            last is not None
            and last[0] is tool_filter
            and last[1] is caller.principal
            and last[2] == version
            and not defer
            and not load
        ):
            return last[3]
        if load:  # only registry tools count (a client's own found tools are its own)
            load = frozenset(n for n in load if self._registry.resolve(n) is not None)
        key = (version, tool_filter, caller.caller, defer, load)
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            if not defer and not load:
                self._last = (tool_filter, caller.principal, version, found)
            return found
        selected = [t for t in tool_filter.select(self._registry) if self._gate.in_scope(t, caller)]
        visible = [t for t in selected if self._gate.visible(t, caller)]
        wire = self._registry.wire_name
        deferred = [
            t
            for t in visible
            if (t.metadata.defer or t.qualified_name in defer) and wire(t) not in load
        ]
        shown = {id(t) for t in visible}
        later_ids = {id(t) for t in deferred}
        injected = [self._shown(t) for t in visible if id(t) not in later_ids]
        later = {wire(t): self._shown(t) for t in deferred}
        toolset = Toolset(
            specs=tuple(spec for spec, _ in injected),
            chat_tools=tuple(chat for _, chat in injected),
            by_wire_name={wire(t): t for t in visible},
            deferred=self._deferred(deferred, own=bool(defer)) if deferred else None,
            deferred_specs={name: spec for name, (spec, _) in later.items()},
            deferred_chat_tools={name: chat for name, (_, chat) in later.items()},
            denied={wire(t): t for t in selected if id(t) not in shown},
        )
        self._cache[key] = toolset
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        if not defer and not load:
            self._last = (tool_filter, caller.principal, version, toolset)
        return toolset

    def _deferred(self, tools: list[Tool], *, own: bool = False) -> DeferredTools:
        """A view on the one index of every deferred tool, built once per registry version
        (a new filter or caller only picks its tools from it); `own`: the request defers
        tools the registry does not, so they get an index of their own (kept with the
        toolset in the cache)."""
        wire = self._registry.wire_name
        if own:
            index = ToolIndex(tools)
            names = [t.qualified_name for t in tools]
            return DeferredTools(
                index, index.positions(names), {t.qualified_name: wire(t) for t in tools}
            )
        version = self._registry.version
        if self._index is None or self._index[0] != version:
            every = [t for t in self._registry.list_tools() if t.metadata.defer]
            self._index = (version, ToolIndex(every))
        index = self._index[1]
        return DeferredTools(
            index,
            index.positions([t.qualified_name for t in tools]),
            {t.qualified_name: wire(t) for t in tools},
        )

    def _shown(self, tool: Tool) -> tuple[ToolSpec, dict[str, Any]]:
        """The tool's spec as the gate shows it, and that spec in Chat's shape with its JSON
        (`ChatTool`): the registry's own Chat schema when the gate left the spec as it was,
        made once per registry version, so toolsets share it rather than each holding a
        copy."""
        registered = self._registry.tool_spec(tool)
        spec = self._gate.spec(tool, registered)
        if spec is not registered:
            return spec, ChatTool(chat_tool(spec))
        version, shared = self._chat_tools
        if version != self._registry.version:
            shared = {}
            self._chat_tools = (self._registry.version, shared)
        chat = shared.get(tool.qualified_name)
        if chat is None:
            chat = shared[tool.qualified_name] = ChatTool(self._registry.openai_schema(tool))
        return spec, chat

    def client_tool_names(self, tools: Any, caller: CallContext = ANONYMOUS) -> frozenset[str]:
        """Names of the client's own function tools.

        Raises:
            BadRequestError: a tool is malformed, named twice, or shadows a registry tool.
        """
        if tools is None:
            return frozenset()
        if not isinstance(tools, list):
            raise BadRequestError("'tools' must be an array", param="tools")
        names: set[str] = set()
        for i, spec in enumerate(tools):
            name = _function_name(spec, i)
            if name in names:
                raise BadRequestError(f"tool {name!r} is defined twice", param=f"tools[{i}]")
            clash = self._registry.resolve(name)
            if name == SEARCH_TOOL or (clash is not None and self._gate.in_scope(clash, caller)):
                raise BadRequestError(
                    f"tool {name!r} clashes with a tool the proxy provides; rename it",
                    param=f"tools[{i}]",
                )
            names.add(name)
        return frozenset(names)


def _function_name(spec: Any, index: int) -> str:
    function = spec.get("function") if isinstance(spec, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(spec, dict) or spec.get("type") != "function" or not isinstance(name, str):
        raise BadRequestError(
            "each tool must be {'type': 'function', 'function': {'name': ...}}",
            param=f"tools[{index}]",
        )
    if not name:
        raise BadRequestError("a tool name must not be empty", param=f"tools[{index}]")
    return name
