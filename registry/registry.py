"""The tool registry: registered tools, their wire names, specs and enabled state."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, overload

from registry.errors import RegistryError, ToolNotFoundError
from registry.tool import Tool, ToolMetadata, ToolSpec
from registry.wire_names import WireNames

__all__ = ["ChangeCallback", "HoldCheck", "ToolRegistry"]

ChangeCallback = Callable[["ToolRegistry"], None]
HoldCheck = Callable[[Tool], "str | None"]
"""Why a tool being registered is held back (its definition awaits review), or None."""
_METADATA_FIELDS = frozenset(f.name for f in dataclasses.fields(ToolMetadata))


@dataclass(frozen=True, slots=True)
class _Entry:
    tool: Tool
    spec: ToolSpec
    schema: dict[str, Any]
    """The spec in Chat's shape (`openai_schema`)."""
    registered_tags: frozenset[str]
    """The tags the tool came with; `update` changes the tool's, never these."""
    disabled_reason: str | None = None
    held_reason: str | None = None
    """Why the tool is held back whatever its enabled state (a definition awaiting an
    operator's review): neither listed nor resolved, like a disabled tool."""


@dataclass(frozen=True, slots=True)
class _Filter:
    tags: frozenset[str] | None
    exclude_tags: frozenset[str]
    namespaces: frozenset[str | None] | None
    names: frozenset[str] | None
    include_disabled: bool

    def matches(self, entry: _Entry) -> bool:
        tool = entry.tool
        tags = tool.metadata.tags
        return (
            (self.include_disabled or (entry.disabled_reason is None and entry.held_reason is None))
            and (self.tags is None or not self.tags.isdisjoint(tags))
            and self.exclude_tags.isdisjoint(tags)
            and (self.namespaces is None or tool.namespace in self.namespaces)
            and (
                self.names is None
                or tool.qualified_name in self.names
                or entry.spec.name in self.names
            )
        )


class ToolRegistry:
    """Holds tools by qualified name, in registration order.

    Meant to be changed from one thread (the event loop's); every change bumps `version`
    and then calls the `on_change` callbacks.
    """

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._wire_names = WireNames()
        self._callbacks: list[ChangeCallback] = []
        self.version = 0
        """A counter that increases on every change to the registry (read it, never set it).
        A plain attribute, not a property: every request's toolset lookup reads it, and a
        property is a Python call on each read."""
        self._hold_check: HoldCheck | None = None

    @overload
    def register(
        self,
        fn_or_tool: Tool | Callable[..., Any],
        *,
        namespace: str | None = None,
        name: str | None = None,
        **metadata_kwargs: Any,
    ) -> Tool: ...

    @overload
    def register(
        self,
        fn_or_tool: None = None,
        *,
        namespace: str | None = None,
        name: str | None = None,
        **metadata_kwargs: Any,
    ) -> Callable[[Tool | Callable[..., Any]], Tool]: ...

    def register(
        self,
        fn_or_tool: Tool | Callable[..., Any] | None = None,
        *,
        namespace: str | None = None,
        name: str | None = None,
        **metadata_kwargs: Any,
    ) -> Tool | Callable[[Tool | Callable[..., Any]], Tool]:
        """Register a tool or a function (also usable as `@register` or `@register(...)`).

        `metadata_kwargs` are `ToolMetadata` fields, plus `description` to replace the
        tool's description. As a decorator it returns the `Tool`, not the function.

        Raises:
            RegistryError: the qualified name is taken, a keyword names no metadata field, or
                the function cannot be described as a tool.
        """
        if fn_or_tool is None:

            def decorate(target: Tool | Callable[..., Any]) -> Tool:
                return self.register(target, namespace=namespace, name=name, **metadata_kwargs)

            return decorate
        tool = _build_tool(fn_or_tool, namespace, name, dict(metadata_kwargs))
        qualified = tool.qualified_name
        if qualified in self._entries:
            raise RegistryError(f"a tool named {qualified!r} is already registered")
        held = self._hold_check(tool) if self._hold_check is not None else None
        spec = ToolSpec(self._wire_names.add(qualified), tool.description, tool.parameters)
        self._entries[qualified] = _Entry(
            tool, spec, _openai_schema(spec), registered_tags=tool.metadata.tags, held_reason=held
        )
        self._changed()
        return tool

    def unregister(self, qualified_name: str) -> None:
        """Remove a tool and free its wire name.

        Raises:
            ToolNotFoundError: no such tool.
        """
        self._entry(qualified_name)
        del self._entries[qualified_name]
        self._wire_names.remove(qualified_name)
        self._changed()

    def update(
        self, qualified_name: str, *, description: str | None = None, **metadata: Any
    ) -> Tool:
        """Change a registered tool's description or metadata in place, keeping its wire
        name and enabled state; returns the changed tool.

        Raises:
            ToolNotFoundError: no such tool.
            RegistryError: a keyword names no metadata field, or a value is invalid.
        """
        entry = self._entry(qualified_name)
        unknown = set(metadata) - _METADATA_FIELDS
        if unknown:
            raise RegistryError(f"unknown tool metadata: {', '.join(sorted(unknown))}")
        tool = entry.tool.with_metadata(**metadata) if metadata else entry.tool
        if description is not None:
            tool = dataclasses.replace(tool, description=description)
        if tool == entry.tool:
            return tool
        spec = dataclasses.replace(entry.spec, description=tool.description)
        self._entries[qualified_name] = dataclasses.replace(
            entry, tool=tool, spec=spec, schema=_openai_schema(spec)
        )
        self._changed()
        return tool

    def enable(self, qualified_name: str) -> None:
        """Enable a disabled tool; enabling an enabled tool changes nothing.

        Raises:
            ToolNotFoundError: no such tool.
        """
        self._set_disabled_reason(qualified_name, None)

    def disable(self, qualified_name: str, reason: str) -> None:
        """Disable a tool: it stays registered but is not listed or resolved by default.

        Raises:
            ToolNotFoundError: no such tool.
        """
        self._set_disabled_reason(qualified_name, reason or "disabled")

    def hold(self, qualified_name: str, reason: str | None) -> None:
        """Hold a tool back (`reason`) or release it (None): a held tool is neither listed
        nor resolved by default, whether or not it is enabled.

        Raises:
            ToolNotFoundError: no such tool.
        """
        entry = self._entry(qualified_name)
        if entry.held_reason == reason:
            return
        self._entries[qualified_name] = dataclasses.replace(entry, held_reason=reason)
        self._changed()

    def held_reason(self, qualified_name: str) -> str | None:
        """Why the tool is held back, or None.

        Raises:
            ToolNotFoundError: no such tool.
        """
        return self._entry(qualified_name).held_reason

    def withheld(self, qualified_name: str) -> tuple[str | None, str | None] | None:
        """Why the tool is held back and why it is disabled (None for each it is not), in
        one lookup; None when there is no such tool."""
        entry = self._entries.get(qualified_name)
        return None if entry is None else (entry.held_reason, entry.disabled_reason)

    def check_holds(self, check: HoldCheck | None) -> None:
        """Decide with `check` whether each tool registered from now on starts held back
        (in the same step as its registration, so that no caller ever sees it unchecked)."""
        self._hold_check = check

    def is_enabled(self, qualified_name: str) -> bool:
        """Whether the tool is enabled.

        Raises:
            ToolNotFoundError: no such tool.
        """
        return self._entry(qualified_name).disabled_reason is None

    def disabled_reason(self, qualified_name: str) -> str | None:
        """Why the tool is disabled, or None when it is enabled.

        Raises:
            ToolNotFoundError: no such tool.
        """
        return self._entry(qualified_name).disabled_reason

    def registered_tags(self, qualified_name: str) -> frozenset[str]:
        """The tags the tool was registered with: those its source, its configuration and its
        code gave it, whatever `update` changed since.

        Raises:
            ToolNotFoundError: no such tool.
        """
        return self._entry(qualified_name).registered_tags

    def get_tool(self, qualified_name: str) -> Tool:
        """The tool registered under `qualified_name`, enabled or not.

        Raises:
            ToolNotFoundError: no such tool.
        """
        return self._entry(qualified_name).tool

    def list_tools(
        self,
        *,
        tags: Iterable[str] | None = None,
        exclude_tags: Iterable[str] | None = None,
        namespaces: Iterable[str | None] | None = None,
        names: Iterable[str] | None = None,
        include_disabled: bool = False,
    ) -> list[Tool]:
        """Tools in registration order, filtered; None means no filter for that argument.

        A tool is kept when it has ANY of `tags`, NONE of `exclude_tags`, a namespace in
        `namespaces`, and a qualified or wire name in `names`. An empty collection keeps
        nothing (except `exclude_tags`, which then excludes nothing).
        """
        selection = _Filter(
            tags=None if tags is None else frozenset(str(t) for t in tags),
            exclude_tags=frozenset(str(t) for t in exclude_tags or ()),
            namespaces=None if namespaces is None else frozenset(namespaces),
            names=None if names is None else frozenset(names),
            include_disabled=include_disabled,
        )
        return [entry.tool for entry in self._entries.values() if selection.matches(entry)]

    def wire_name(self, tool: Tool | str) -> str:
        """The name the tool carries on the wire (`^[a-zA-Z0-9_-]{1,64}$`).

        Raises:
            ToolNotFoundError: the tool is not registered.
        """
        return self._entry(_qualified(tool)).spec.name

    def resolve(self, name: str, *, include_disabled: bool = False) -> Tool | None:
        """Map a wire name (or a qualified name) back to its tool by lookup.

        Disabled tools resolve to None unless `include_disabled`, so they cannot be called.
        """
        qualified = self._wire_names.qualified_name(name) or name
        entry = self._entries.get(qualified)
        if entry is None:
            return None
        if (entry.disabled_reason or entry.held_reason) is not None and not include_disabled:
            return None
        return entry.tool

    def tool_spec(self, tool: Tool | str) -> ToolSpec:
        """What callers are shown of the tool (wire name, description, parameters), built
        once at registration and on `update`: the same object until the tool changes.

        Raises:
            ToolNotFoundError: the tool is not registered.
        """
        return self._entry(_qualified(tool)).spec

    def openai_schema(self, tool: Tool | str) -> dict[str, Any]:
        """The tool's spec as an OpenAI Chat function tool, built with the spec.

        The same dict is returned every time and shared by all callers: do not mutate it.

        Raises:
            ToolNotFoundError: the tool is not registered.
        """
        return self._entry(_qualified(tool)).schema

    def on_change(self, callback: ChangeCallback) -> Callable[[], None]:
        """Call `callback(registry)` after every change; returns a function that unsubscribes.

        A callback that raises propagates to whoever made the change (which is kept).
        """
        self._callbacks.append(callback)

        def unsubscribe() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return unsubscribe

    def __contains__(self, qualified_name: object) -> bool:
        return qualified_name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Tool]:
        """All registered tools, enabled or not, in registration order."""
        return iter([entry.tool for entry in self._entries.values()])

    def _entry(self, qualified_name: str) -> _Entry:
        try:
            return self._entries[qualified_name]
        except KeyError:
            raise ToolNotFoundError(f"no tool named {qualified_name!r}") from None

    def _set_disabled_reason(self, qualified_name: str, reason: str | None) -> None:
        entry = self._entry(qualified_name)
        if entry.disabled_reason == reason:
            return
        self._entries[qualified_name] = dataclasses.replace(entry, disabled_reason=reason)
        self._changed()

    def _changed(self) -> None:
        self.version += 1
        for callback in list(self._callbacks):
            callback(self)


def _openai_schema(spec: ToolSpec) -> dict[str, Any]:
    function = {"name": spec.name, "description": spec.description, "parameters": spec.parameters}
    return {"type": "function", "function": function}


def _qualified(tool: Tool | str) -> str:
    return tool if isinstance(tool, str) else tool.qualified_name


def _build_tool(
    target: Tool | Callable[..., Any],
    namespace: str | None,
    name: str | None,
    metadata_kwargs: dict[str, Any],
) -> Tool:
    description = metadata_kwargs.pop("description", None)
    unknown = set(metadata_kwargs) - _METADATA_FIELDS
    if unknown:
        raise RegistryError(f"unknown tool metadata: {', '.join(sorted(unknown))}")
    if not isinstance(target, Tool):
        tool = Tool.from_function(target, name=name, namespace=namespace, description=description)
        return tool.with_metadata(**metadata_kwargs) if metadata_kwargs else tool
    tool = target
    changes: dict[str, Any] = {
        key: value
        for key, value in (("namespace", namespace), ("name", name), ("description", description))
        if value is not None
    }
    if changes:
        tool = dataclasses.replace(tool, **changes)
    return tool.with_metadata(**metadata_kwargs) if metadata_kwargs else tool
