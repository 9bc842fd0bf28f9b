"""Which registry tools one request may see: tag, namespace and name filters."""

from __future__ import annotations

from dataclasses import dataclass

from registry import Tool, ToolRegistry


@dataclass(frozen=True, slots=True)
class ToolFilter:
    """A narrowing of the registry; `None` means no condition on that field."""

    tags: frozenset[str] | None = None
    exclude_tags: frozenset[str] = frozenset()
    namespaces: frozenset[str] | None = None
    names: frozenset[str] | None = None

    def narrow(self, other: ToolFilter) -> ToolFilter:
        """Both filters at once: a client can narrow a server filter, never widen it."""
        return ToolFilter(
            tags=_intersect(self.tags, other.tags),
            exclude_tags=self.exclude_tags | other.exclude_tags,
            namespaces=_intersect(self.namespaces, other.namespaces),
            names=_intersect(self.names, other.names),
        )

    def select(self, registry: ToolRegistry) -> list[Tool]:
        """The enabled tools of `registry` that pass this filter, in registration order."""
        tools = registry.list_tools(
            tags=self.tags,
            exclude_tags=self.exclude_tags or None,
            namespaces=self.namespaces,
        )
        if self.names is None:
            return tools
        return [
            t
            for t in tools
            if t.qualified_name in self.names or registry.wire_name(t) in self.names
        ]


def _intersect(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


NO_FILTER = ToolFilter()
