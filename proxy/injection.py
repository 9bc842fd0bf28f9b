"""The tools one request shows the model: registry tools the policy and filters allow.

Schemas come precomputed from the registry; the selected set is cached per filter and
registry version, so a request does no schema work.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies import Policy, ToolFilter
from registry import Tool, ToolRegistry

from .errors import BadRequestError


@dataclass(frozen=True, slots=True)
class Toolset:
    """The registry tools visible to one request."""

    schemas: tuple[dict[str, Any], ...]
    by_wire_name: Mapping[str, Tool]


class Catalog:
    """Selects and caches visible toolsets."""

    def __init__(self, registry: ToolRegistry, policy: Policy, *, cache_size: int = 256) -> None:
        self._registry = registry
        self._policy = policy
        self._cache: OrderedDict[tuple[int, ToolFilter], Toolset] = OrderedDict()
        self._cache_size = cache_size

    def toolset(self, tool_filter: ToolFilter) -> Toolset:
        """The tools `tool_filter` lets a request see (deferred and denied tools excluded)."""
        key = (self._registry.version, tool_filter)
        found = self._cache.get(key)
        if found is not None:
            return found
        tools = [
            t
            for t in tool_filter.select(self._registry)
            if not t.metadata.defer and self._policy.visible(t)
        ]
        toolset = Toolset(
            schemas=tuple(self._registry.openai_schema(t) for t in tools),
            by_wire_name={self._registry.wire_name(t): t for t in tools},
        )
        self._cache[key] = toolset
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return toolset

    def client_tool_names(self, tools: Any) -> frozenset[str]:
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
            if self._registry.resolve(name) is not None:
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
