"""Declaring tools in code: the `@tool` mark, a fluent `ToolBuilder`, and `ToolKit` groups."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar, overload

from registry.errors import RegistryError
from registry.tool import ExecutionMode, Tool, ToolMetadata

__all__ = ["ToolBuilder", "ToolKit", "ToolMark", "describe", "tool", "tool_mark"]

F = TypeVar("F", bound=Callable[..., Any])
_MARK = "__toolwire_tool__"
_MARKABLE = frozenset(f.name for f in dataclasses.fields(ToolMetadata)) - {
    "tags",
    "source",
    "extra",
}


@dataclass(frozen=True, slots=True)
class ToolMark:
    """What `@tool` recorded on a function: only the settings it was given."""

    name: str | None = None
    description: str | None = None
    tags: frozenset[str] = frozenset()
    metadata: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@overload
def tool(fn: F, /) -> F: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    tags: Iterable[str] = (),
    **metadata: Any,
) -> Callable[[F], F]: ...


def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    tags: Iterable[str] = (),
    **metadata: Any,
) -> F | Callable[[F], F]:
    """Mark a function as a tool with settings (`ToolMetadata` fields such as `timeout_s`,
    `defer`, `execution_mode`, `retries`); the function itself is returned unchanged.

    The python source and `describe` honour the mark; a source's config overrides win.

    Raises:
        RegistryError: a keyword names no metadata field, or tags is a string.
    """
    unknown = set(metadata) - _MARKABLE
    if unknown:
        raise RegistryError(f"@tool: unknown settings: {', '.join(sorted(unknown))}")
    if isinstance(tags, str):
        raise RegistryError(f"@tool: tags must be a collection, not {tags!r}")
    mark = ToolMark(name, description, frozenset(str(t) for t in tags), MappingProxyType(metadata))

    def decorate(target: F) -> F:
        setattr(target, _MARK, mark)
        return target

    return decorate if fn is None else decorate(fn)


def tool_mark(fn: Any) -> ToolMark | None:
    """The `@tool` mark on `fn`, or None."""
    mark = getattr(fn, _MARK, None)
    return mark if isinstance(mark, ToolMark) else None


def describe(
    fn: Callable[..., Any], *, namespace: str | None = None, source: str = "python"
) -> Tool:
    """`Tool.from_function`, honouring the function's `@tool` mark.

    Raises:
        RegistryError: the function cannot be described or a setting is invalid.
    """
    mark = tool_mark(fn) or ToolMark()
    described = Tool.from_function(
        fn,
        name=mark.name,
        description=mark.description,
        namespace=namespace,
        tags=mark.tags,
        source=source,
    )
    return described.with_metadata(**mark.metadata) if mark.metadata else described


class ToolBuilder:
    """A fluent way to describe a function as a tool: `ToolBuilder(fn).name("x").build()`."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self._fn = fn
        self._name: str | None = None
        self._description: str | None = None
        self._namespace: str | None = None
        self._tags: set[str] = set()
        self._metadata: dict[str, Any] = {}

    def name(self, name: str) -> ToolBuilder:
        self._name = name
        return self

    def description(self, description: str) -> ToolBuilder:
        self._description = description
        return self

    def namespace(self, namespace: str) -> ToolBuilder:
        self._namespace = namespace
        return self

    def tags(self, *tags: str) -> ToolBuilder:
        self._tags.update(tags)
        return self

    def timeout(self, seconds: float) -> ToolBuilder:
        return self._set("timeout_s", seconds)

    def mode(self, mode: ExecutionMode) -> ToolBuilder:
        return self._set("execution_mode", mode)

    def retries(self, retries: int) -> ToolBuilder:
        return self._set("retries", retries)

    def idempotent(self, idempotent: bool = True) -> ToolBuilder:
        return self._set("idempotent", idempotent)

    def defer(self, defer: bool = True, search_hint: str | None = None) -> ToolBuilder:
        self._set("search_hint", search_hint)
        return self._set("defer", defer)

    def concurrency_safe(self, safe: bool) -> ToolBuilder:
        return self._set("is_concurrency_safe", safe)

    def max_result_size(self, characters: int) -> ToolBuilder:
        return self._set("max_result_size", characters)

    def build(self) -> Tool:
        """The tool, the function's `@tool` mark applied first and the builder's settings over it.

        Raises:
            RegistryError: the function cannot be described or a setting is invalid.
        """
        base = describe(self._fn, namespace=self._namespace)
        changes: dict[str, Any] = {}
        if self._name is not None:
            changes["name"] = self._name
        if self._description is not None:
            changes["description"] = self._description
        built = dataclasses.replace(base, **changes) if changes else base
        return built.with_metadata(tags=built.metadata.tags | self._tags, **self._metadata)

    def _set(self, key: str, value: Any) -> ToolBuilder:
        self._metadata[key] = value
        return self


class ToolKit:
    """Tools registered together, under one namespace and with shared tags."""

    def __init__(
        self, namespace: str | None = None, *, tags: Iterable[str] = (), tools: Iterable[Any] = ()
    ) -> None:
        self.namespace = namespace
        self._tags = frozenset(tags)
        self._tools: list[Tool] = []
        for item in tools:
            self.add(item)

    def add(self, item: Tool | Callable[..., Any]) -> Tool:
        """Add a tool or a function (its `@tool` mark honoured); usable as a decorator too.

        Raises:
            RegistryError: the function cannot be described.
        """
        base = item if isinstance(item, Tool) else describe(item)
        kit_tool = dataclasses.replace(base, namespace=self.namespace or base.namespace)
        kit_tool = kit_tool.with_metadata(tags=kit_tool.metadata.tags | self._tags)
        self._tools.append(kit_tool)
        return kit_tool

    @property
    def tools(self) -> list[Tool]:
        """The kit's tools, in the order they were added."""
        return list(self._tools)
