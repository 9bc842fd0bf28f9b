"""Composing registries: merge one into another, spin a namespace off, drop a namespace.

Tools are immutable, so these move or copy `Tool` values: the functions (and the sessions
of remote tools) are shared, and a source that later re-registers its tools does so in the
registry it was started with. Every change goes through `register`/`unregister`, so wire
names stay unique and `on_change` callbacks see each step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from registry.errors import RegistryError
from registry.registry import ToolRegistry
from registry.tool import Tool

__all__ = ["merge", "reduce_namespace", "spinoff"]


def merge(
    registry: ToolRegistry, other: ToolRegistry, *, namespace: str | None = None
) -> list[Tool]:
    """Register every tool of `other` (enabled or not) in `registry`; return them as merged.

    With `namespace`, every merged tool is put in that namespace; a tool that already had
    another namespace keeps it as a name prefix (`time.now` → `ns.time_now`), so tools stay
    distinct. `other` is left as it was. Nothing is merged if any name clashes.

    Raises:
        RegistryError: a merged name is already registered in `registry`.
    """
    incoming = [
        (_renamed(tool, namespace), other.disabled_reason(tool.qualified_name)) for tool in other
    ]
    names = [tool.qualified_name for tool, _ in incoming]
    clashes = sorted({name for name in names if name in registry or names.count(name) > 1})
    if clashes:
        raise RegistryError(f"cannot merge: tools already registered: {', '.join(clashes)}")
    for tool, reason in incoming:
        registry.register(tool)
        if reason is not None:
            registry.disable(tool.qualified_name, reason)
    return [tool for tool, _ in incoming]


def spinoff(
    registry: ToolRegistry, namespace: str, *, keep_namespace: bool = False
) -> ToolRegistry:
    """Move the tools of `namespace` out of `registry` into a new registry, and return it.

    The new registry holds them without the namespace (it is the namespace), unless
    `keep_namespace`. Disabled tools stay disabled.

    Raises:
        RegistryError: no tool is in `namespace`.
    """
    moving = [tool for tool in registry if tool.namespace == namespace]
    if not moving:
        raise RegistryError(f"no tools in namespace {namespace!r}")
    spun = ToolRegistry()
    for tool in moving:
        reason = registry.disabled_reason(tool.qualified_name)
        moved = tool if keep_namespace else dataclasses.replace(tool, namespace=None)
        spun.register(moved)
        if reason is not None:
            spun.disable(moved.qualified_name, reason)
    for tool in moving:
        registry.unregister(tool.qualified_name)
    return spun


def reduce_namespace(registry: ToolRegistry, namespace: str | None = None) -> list[Tool]:
    """Drop `namespace` from its tools wherever the bare name is free; return the renamed tools.

    A tool whose bare name is already taken keeps its namespace. Without `namespace`, the
    registry's only namespace is reduced; with several (or none) nothing changes. Tools
    keep their place in the registration order; renamed tools get new wire names.
    """
    if namespace is None:
        namespaces = {tool.namespace for tool in registry if tool.namespace is not None}
        if len(namespaces) != 1:
            return []
        (namespace,) = namespaces
    taken = {tool.qualified_name for tool in registry if tool.namespace != namespace}
    renamed: dict[str, Tool] = {}
    for tool in registry:
        if tool.namespace == namespace and tool.name not in taken:
            taken.add(tool.name)
            renamed[tool.qualified_name] = dataclasses.replace(tool, namespace=None)
    if renamed:
        _replace_in_place(registry, renamed)
    return list(renamed.values())


def _renamed(tool: Tool, namespace: str | None) -> Tool:
    if namespace is None or tool.namespace == namespace:
        return tool
    name = f"{tool.namespace}_{tool.name}" if tool.namespace else tool.name
    return dataclasses.replace(tool, namespace=namespace, name=name)


def _replace_in_place(registry: ToolRegistry, replacements: Mapping[str, Tool]) -> None:
    """Swap tools for renamed copies, keeping the registration order and disabled state."""
    snapshot = [(tool, registry.disabled_reason(tool.qualified_name)) for tool in registry]
    first = next(i for i, (tool, _) in enumerate(snapshot) if tool.qualified_name in replacements)
    # Everything from the first renamed tool on is re-registered, because the registry
    # appends: this keeps the order, and so the order of injected schemas (prompt caching).
    tail = snapshot[first:]
    for tool, _ in tail:
        registry.unregister(tool.qualified_name)
    for tool, reason in tail:
        replacement = replacements.get(tool.qualified_name, tool)
        registry.register(replacement)
        if reason is not None:
            registry.disable(replacement.qualified_name, reason)
