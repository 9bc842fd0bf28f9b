"""The tools one request offers: names the parser accepts and schemas for type conversion."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .repairs import Repair

_LOOSE = re.compile(r"[^a-z0-9]")


@dataclass(frozen=True, slots=True)
class ToolSpecs:
    """Function tools by name; `allowed` are the names a reply may call (tool_choice)."""

    schemas: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    allowed: frozenset[str] = frozenset()

    @classmethod
    def from_tools(cls, tools: Iterable[Any], allowed: Iterable[str] | None = None) -> ToolSpecs:
        """Specs from OpenAI `tools`; every function tool is allowed unless `allowed` narrows."""
        schemas: dict[str, dict[str, Any]] = {}
        for tool in tools:
            function = tool.get("function") if isinstance(tool, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                parameters = function.get("parameters")
                schemas[function["name"]] = parameters if isinstance(parameters, dict) else {}
        names = frozenset(schemas) if allowed is None else frozenset(allowed) & set(schemas)
        return cls(schemas, names)

    def resolve(self, name: str, lenient: bool, repairs: list[Repair]) -> str | None:
        """The offered tool `name` means: exact, else (lenient) the one equal ignoring case,
        dots, dashes and underscores; None when unknown or not allowed."""
        if name in self.allowed:
            return name
        if not lenient:
            return None
        loose = _LOOSE.sub("", name.lower())
        matches = [n for n in self.allowed if _LOOSE.sub("", n.lower()) == loose]
        if len(matches) != 1:
            return None
        repairs.append(Repair.NAME_NORMALIZED)
        return matches[0]

    def parameters(self, name: str) -> dict[str, Any]:
        """The JSON schema of a tool's arguments ({} when none was given)."""
        return self.schemas.get(name, {})
