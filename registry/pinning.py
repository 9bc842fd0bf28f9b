"""Pinned tool definitions: what of a tool a pin covers, its digest, and how two differ.

A source with `pinning: warn` or `block` has each tool's definition pinned when first seen;
a later listing that serves a different definition is drift, which the proxy holds back
(`block`) or flags (`warn`) until an operator accepts or rejects it. The definition is what
the model is shown and what constrains a call: the name, the description, the input and
output schemas and the annotations, each in canonical JSON.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from registry.tool import Tool

__all__ = ["PINNING_MODES", "PinningMode", "ToolDefinition"]

PinningMode = Literal["off", "warn", "block"]
PINNING_MODES: tuple[PinningMode, ...] = ("off", "warn", "block")


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """What a pin covers of one tool, as served (with the configuration's overrides)."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, tool: Tool) -> ToolDefinition:
        """The definition `tool` is served with."""
        extra = tool.metadata.extra
        output = extra.get("output_schema")
        annotations = extra.get("annotations")
        return cls(
            name=tool.qualified_name,
            description=tool.description,
            input_schema=dict(tool.parameters or {}),
            output_schema=dict(output) if isinstance(output, Mapping) else None,
            annotations=dict(annotations) if isinstance(annotations, Mapping) else None,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolDefinition:
        """A definition from `to_json`'s shape.

        Raises:
            KeyError, TypeError: `data` is not such a shape.
        """
        return cls(
            name=str(data["name"]),
            description=str(data["description"]),
            input_schema=dict(data["input_schema"]),
            output_schema=data.get("output_schema"),
            annotations=data.get("annotations"),
        )

    def to_json(self) -> dict[str, Any]:
        """The definition as plain JSON values."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
            "output_schema": None if self.output_schema is None else dict(self.output_schema),
            "annotations": None if self.annotations is None else dict(self.annotations),
        }

    @property
    def digest(self) -> str:
        """`sha256:` and the hex digest of the canonical JSON (sorted keys, no spaces)."""
        canonical = orjson.dumps(self.to_json(), option=orjson.OPT_SORT_KEYS)
        return "sha256:" + hashlib.sha256(canonical).hexdigest()

    def diff(self, other: ToolDefinition) -> str:
        """A unified diff from this definition to `other`, line by line of indented JSON."""
        return "".join(
            difflib.unified_diff(
                _lines(self), _lines(other), fromfile="pinned", tofile="served", n=2
            )
        )


def _lines(definition: ToolDefinition) -> list[str]:
    options = orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
    return orjson.dumps(definition.to_json(), option=options).decode().splitlines(keepends=True)
