"""The registry as operators steer it: listing, toggles, live metadata, export and import."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from policies import CallContext, Gate, Loosening, Principal
from registry import Tool, ToolMetadata, ToolNotFoundError, ToolRegistry

from ..errors import ProxyError
from .hub import EventHub
from .models import (
    ImportReport,
    KeyDecision,
    StateDocument,
    ToolDetail,
    ToolPatch,
    ToolState,
    ToolSummary,
)

log = logging.getLogger("toolwire.admin")


@dataclass(frozen=True, slots=True)
class ToolQuery:
    """Filters of the tools table; None means no condition."""

    namespace: str | None = None
    tag: str | None = None
    source: str | None = None
    """A source label (`python:examples/tools.py`) or its kind (`python`, `mcp`)."""
    enabled: bool | None = None
    deferred: bool | None = None
    search: str | None = None
    """Words found in the name, description, tags or search hint."""

    def matches(self, tool: Tool, enabled: bool) -> bool:
        meta = tool.metadata
        return (
            (self.namespace is None or tool.namespace == self.namespace)
            and (self.tag is None or self.tag in meta.tags)
            and (
                self.source is None
                or meta.source == self.source
                or meta.source.startswith(self.source + ":")
            )
            and (self.enabled is None or enabled == self.enabled)
            and (self.deferred is None or meta.defer == self.deferred)
            and (self.search is None or _found(self.search, tool))
        )


class ToolDesk:
    """Reads and changes the registry for the admin API; remembers what operators changed,
    so that it can be exported and imported."""

    def __init__(
        self,
        registry: ToolRegistry,
        gate: Gate,
        callers: Sequence[tuple[str, Principal | None]],
        hub: EventHub,
    ) -> None:
        self._registry = registry
        self._gate = gate
        self._callers = callers
        """Each configured key's name and principal (`anonymous`, None, without auth)."""
        self._hub = hub
        self._patched: dict[str, ToolPatch] = {}

    def list(self, query: ToolQuery) -> list[ToolSummary]:
        """The registered tools the query keeps, in registration order."""
        registry = self._registry
        return [
            self._summary(tool)
            for tool in registry
            if query.matches(tool, registry.is_enabled(tool.qualified_name))
        ]

    async def detail(self, name: str) -> ToolDetail:
        """One tool, with its schema, metadata and each key's decision.

        Raises:
            ToolNotFoundError: no such tool.
        """
        tool = self._registry.get_tool(name)
        meta = {f.name: getattr(tool.metadata, f.name) for f in dataclasses.fields(ToolMetadata)}
        meta["tags"] = sorted(tool.metadata.tags)
        meta["extra"] = {k: _plain(v) for k, v in tool.metadata.extra.items()}
        return ToolDetail(
            **self._summary(tool).model_dump(),
            parameters=tool.parameters,
            metadata=meta,
            decisions=[await self._decision(tool, *caller) for caller in self._callers],
        )

    def toggle(self, name: str, *, enabled: bool, reason: str, by: str) -> ToolSummary:
        """Enable or disable a tool.

        Raises:
            ToolNotFoundError: no such tool.
        """
        if enabled:
            self._registry.enable(name)
        else:
            self._registry.disable(name, reason or f"disabled by {by}")
        log.info("admin: %s %s tool %s: %s", by, "enabled" if enabled else "disabled", name, reason)
        self._hub.publish("tool", {"tool": name, "enabled": enabled, "reason": reason, "by": by})
        return self._summary(self._registry.get_tool(name))

    def patch(self, name: str, patch: ToolPatch, *, by: str) -> ToolSummary:
        """Change a tool's metadata now; the catalog follows the registry's version. Tags may
        be added, unless that makes the policy less strict for any caller than the
        configured tags make it, and those added here removed; the configuration's stay.

        Raises:
            ToolNotFoundError: no such tool.
            RegistryError: a value the tool model refuses.
            ProxyError: 409, the patch removes a tag the configuration gave the tool, or its
                tags would loosen a caller's decision on the tool.
        """
        self._check(name, patch)
        changes = patch.model_dump(exclude_unset=True)
        metadata = _metadata(changes)
        tool = self._registry.update(name, description=changes.get("description"), **metadata)
        merged = {**self._patched.get(name, ToolPatch()).model_dump(exclude_unset=True), **changes}
        self._patched[name] = ToolPatch(**merged)
        log.info("admin: %s changed tool %s: %s", by, name, sorted(changes))
        self._hub.publish("tool", {"tool": name, "changed": sorted(changes), "by": by})
        return self._summary(tool)

    def patch_namespace(
        self, namespace: str, patch: ToolPatch, *, by: str
    ) -> Sequence[ToolSummary]:
        """Change the metadata of every tool of `namespace` now, as `patch` does for one.

        Raises:
            ToolNotFoundError: the namespace has no tools.
            RegistryError: a value the tool model refuses (then no tool is changed).
            ProxyError: 409, the patch removes a tag the configuration gave one of the tools,
                or its tags would loosen a caller's decision on one (then no tool is changed).
        """
        names = [t.qualified_name for t in self._registry if t.namespace == namespace]
        if not names:
            raise ToolNotFoundError(f"no tools in namespace {namespace!r}")
        for name in names:
            self._check(name, patch)  # raises before anything changed
        changed = [self.patch(name, patch, by=by) for name in names]
        self._hub.publish(
            "namespace",
            {
                "namespace": namespace,
                "tools": names,
                "changed": sorted(patch.model_fields_set),
                "by": by,
            },
        )
        return changed

    @property
    def callers(self) -> tuple[str, ...]:
        """The configured keys' names, in configuration order."""
        return tuple(name for name, _ in self._callers)

    def export(self) -> StateDocument:
        """Every tool's enabled state and the metadata operators changed."""
        registry = self._registry
        return StateDocument(
            format="toolwire-admin-state/1",
            tools={
                tool.qualified_name: ToolState(
                    enabled=registry.is_enabled(tool.qualified_name),
                    disabled_reason=registry.disabled_reason(tool.qualified_name),
                    metadata=self._patched.get(tool.qualified_name, ToolPatch()),
                )
                for tool in registry
            },
        )

    def load(self, document: StateDocument, *, by: str) -> ImportReport:
        """Apply an exported state: tools this proxy lacks are reported, not created. Every
        tool's metadata is checked before any is applied, as `patch` checks it.

        Raises:
            RegistryError: a metadata value the tool model refuses (then nothing changed).
            ProxyError: 409, a tool's tags leave out one the configuration gave it, or would
                loosen a caller's decision on it (then nothing changed).
        """
        applied, unknown = [], []
        for name, state in document.tools.items():
            if name in self._registry:
                self._check(name, state.metadata)
        for name, state in document.tools.items():
            if name not in self._registry:
                unknown.append(name)
                continue
            if state.metadata.model_fields_set:
                self.patch(name, state.metadata, by=by)
            if state.enabled != self._registry.is_enabled(name) or not state.enabled:
                self.toggle(name, enabled=state.enabled, reason=state.disabled_reason or "", by=by)
            applied.append(name)
        return ImportReport(applied=applied, unknown=unknown)

    def _check(self, name: str, patch: ToolPatch) -> None:
        """Raise what applying `patch` to the tool would raise, changing nothing.

        Raises:
            ToolNotFoundError: no such tool.
            RegistryError: a value the tool model refuses.
            ProxyError: 409, the patch's tags leave out one the configuration gave the tool,
                or would make a caller's decision on it less strict than the configured
                tags make it (`Policy.loosenings`).
        """
        changes = patch.model_dump(exclude_unset=True)
        metadata = _metadata(changes)
        tool = self._registry.get_tool(name)
        tool.with_metadata(**metadata)
        if "tags" not in metadata:
            return
        configured = self._registry.registered_tags(name)
        removed = configured - metadata["tags"]
        if removed:
            raise ProxyError(self._kept_tags(name, removed), status=409, code="conflict")
        # Compared with the configured tags, not the current ones: going back to the
        # configuration is always allowed, and nothing looser than it ever is.
        loosened = self._gate.policy.loosenings(
            tool.with_metadata(tags=configured),
            tool.with_metadata(tags=metadata["tags"]),
            self._principals,
        )
        if loosened:
            raise ProxyError(_loosening(name, loosened), status=409, code="conflict")

    @property
    def _principals(self) -> tuple[Principal, ...]:
        return tuple(principal for _, principal in self._callers if principal is not None)

    def _kept_tags(self, name: str, tags: frozenset[str]) -> str:
        """Why `tags` stay on tool `name`, with the rules that match on each."""
        named = []
        for tag in sorted(tags):
            rules = self._gate.policy.rules_on_tag(tag, self._principals)
            named.append(f"{tag!r} (rules on it: {', '.join(rules)})" if rules else repr(tag))
        which = f"tag {named[0]} comes" if len(named) == 1 else f"tags {', '.join(named)} come"
        return (
            f"tool {name!r}: the {which} from the configuration, and the admin API cannot "
            "remove configured tags (it can add tags, and remove those it added)"
        )

    def _summary(self, tool: Tool) -> ToolSummary:
        registry = self._registry
        meta = tool.metadata
        return ToolSummary(
            name=tool.qualified_name,
            wire_name=registry.wire_name(tool),
            namespace=tool.namespace,
            description=tool.description,
            source=meta.source,
            tags=sorted(meta.tags),
            enabled=registry.is_enabled(tool.qualified_name),
            disabled_reason=registry.disabled_reason(tool.qualified_name),
            deferred=meta.defer,
            search_hint=meta.search_hint,
            timeout_s=meta.timeout_s,
        )

    async def _decision(self, tool: Tool, key: str, principal: Principal | None) -> KeyDecision:
        context = CallContext(principal)
        enabled = self._registry.is_enabled(tool.qualified_name)
        if not (enabled and self._gate.visible(tool, context)):
            return KeyDecision(key=key, visible=False, action=None)
        decision = await self._gate.policy.check(tool, {}, context)
        action: Any = decision.action.value
        return KeyDecision(key=key, visible=True, action=action)


def _loosening(name: str, loosened: Sequence[Loosening]) -> str:
    """Why a tag edit of tool `name` is refused: each caller's decision it would loosen."""
    return (
        f"tool {name!r}: the new tags would make the policy less strict than the "
        f"configured tags make it: {'; '.join(map(str, loosened))}. The admin API can add "
        "tags that keep or tighten every decision, not ones that loosen any"
    )


def _metadata(changes: dict[str, Any]) -> dict[str, Any]:
    """A patch's fields as the registry's metadata keywords (the description aside)."""
    metadata = {k: v for k, v in changes.items() if k != "description"}
    if "tags" in metadata:
        metadata["tags"] = frozenset(metadata["tags"] or ())
    if "defer" in metadata:
        metadata["defer"] = bool(metadata["defer"])
    return metadata


def _found(search: str, tool: Tool) -> bool:
    meta = tool.metadata
    text = " ".join(
        [tool.qualified_name, tool.description, meta.search_hint or "", *meta.tags]
    ).lower()
    return all(word in text for word in search.lower().split())


def _plain(value: Any) -> Any:
    """`value` if JSON can hold it, else its repr (extra metadata may hold any object)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return repr(value)
