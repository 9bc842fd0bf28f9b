"""What a `tools:` entry says about its tools, and the one place where it is applied.

Every kind of source shares the keys of `SourceSettings` (namespace, tags, defer, per-tool
overrides). A source names its tools (the namespace is part of a tool's identity, checked
before anything is registered) and registers them through a `ConfiguredRegistry`, which
adds the entry's tags and defer and applies the tool's override on the way in. Adding an
override field is one edit: a `ToolOverride` field named like a `ToolMetadata` field is
applied as it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from registry.registry import ToolRegistry
from registry.tool import Tool

__all__ = ["DISABLED_IN_CONFIG", "ConfiguredRegistry", "SourceSettings", "ToolOverride"]

DISABLED_IN_CONFIG = "disabled in config"


class ToolOverride(BaseModel):
    """Per-tool settings in a source's `overrides`; unset fields keep the tool's values."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    tags: list[str] | None = None
    defer: bool | None = None
    search_hint: str | None = None
    timeout_s: float | None = Field(default=None, gt=0)
    enabled: bool | None = None
    description: str | None = None
    max_result_size: int | None = Field(default=None, gt=0)
    is_concurrency_safe: bool | None = None


# Fields with a rule of their own; every other field replaces the metadata field it names.
_SPECIAL = frozenset({"tags", "defer", "enabled", "description"})
_NO_OVERRIDE = ToolOverride()


class SourceSettings(BaseModel):
    """The keys every `tools:` entry with overrides shares (its config model extends this).

    Tags are added to each tool's own; `defer: true` defers every tool; an override, keyed
    by the tool's name within the source, wins over both.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    namespace: str | None = None
    tags: list[str] = []
    defer: bool = False
    overrides: dict[str, ToolOverride] = {}
    pinning: Literal["off", "warn", "block"] = "off"
    """Pin each tool's definition when first seen; a changed one is flagged (`warn`) or held
    back (`block`) until an operator accepts it (the README's **Pinned tool definitions**)."""
    review_new_tools: bool = False
    """With pinning: a tool the source adds after its first listing waits for acceptance."""

    @field_validator("pinning", mode="before")
    @classmethod
    def _pinning_off(cls, value: Any) -> Any:
        # YAML reads a bare `pinning: off` as false.
        return "off" if value is False else value

    def override(self, name: str) -> ToolOverride:
        """The override for the tool named `name` (an empty one when there is none)."""
        return self.overrides.get(name) or _NO_OVERRIDE

    def dress(self, tool: Tool) -> Tool:
        """`tool` with the entry's tags and defer added and its override applied.

        Raises:
            RegistryError: an overridden value is invalid for the tool.
        """
        override = self.override(tool.name)
        own = tool.metadata
        changes: dict[str, Any] = {
            "tags": own.tags | frozenset(self.tags) | frozenset(override.tags or ()),
            "defer": (own.defer or self.defer) if override.defer is None else override.defer,
            "pinning": self.pinning,
            "review_new": self.review_new_tools,
        }
        for key, value in override:
            if key not in _SPECIAL and value is not None:
                changes[key] = value
        dressed = tool.with_metadata(**changes)
        if override.description:
            dressed = dataclasses.replace(dressed, description=override.description)
        return dressed

    def beneath(self, defaults: Mapping[str, ToolOverride]) -> SourceSettings:
        """These settings with per-tool `defaults` (a source's own choices, such as a
        function's `@tool` mark) that the entry's overrides win over, field by field."""
        merged = {
            name: ToolOverride.model_validate(
                {
                    **defaults.get(name, _NO_OVERRIDE).model_dump(exclude_none=True),
                    **self.override(name).model_dump(exclude_none=True),
                }
            )
            for name in defaults.keys() | self.overrides.keys()
        }
        return self.model_copy(update={"overrides": merged})


class ConfiguredRegistry:
    """A view of a registry that dresses every tool registered through it (`dress`) and
    disables those the entry disables; everything else reaches the registry unchanged."""

    def __init__(self, registry: ToolRegistry, settings: SourceSettings) -> None:
        self.registry = registry
        self.settings = settings

    def register(self, tool: Tool) -> Tool:
        """Register `tool` as the settings dress it; disabled when its override says so.

        Raises:
            RegistryError: the name is taken, or an overridden value is invalid.
        """
        registered = self.registry.register(self.settings.dress(tool))
        if self.settings.override(tool.name).enabled is False:
            self.registry.disable(registered.qualified_name, DISABLED_IN_CONFIG)
        return registered

    def unregister(self, qualified_name: str) -> None:
        """See `ToolRegistry.unregister`."""
        self.registry.unregister(qualified_name)

    def disable(self, qualified_name: str, reason: str) -> None:
        """See `ToolRegistry.disable`."""
        self.registry.disable(qualified_name, reason)

    def disabled_reason(self, qualified_name: str) -> str | None:
        """See `ToolRegistry.disabled_reason`."""
        return self.registry.disabled_reason(qualified_name)

    def __contains__(self, qualified_name: object) -> bool:
        return qualified_name in self.registry
