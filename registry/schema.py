"""Tidying of pydantic JSON schemas into the flat form model servers accept."""

from __future__ import annotations

from typing import Any

__all__ = ["flatten_schema"]

_DEFS_PREFIX = "#/$defs/"
# Values of these keywords map property names to schemas: the names are data, not keywords.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs"})
# Values of these keywords are instance data and must be copied untouched.
_DATA_KEYWORDS = frozenset({"default", "const", "enum", "examples"})


class _RecursiveRefError(Exception):
    """A $ref points back into itself, so the schema cannot be inlined."""


def flatten_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline `$defs` references and drop `title` keywords; recursive schemas keep `$defs`."""
    defs: dict[str, Any] = schema.get("$defs", {})
    try:
        flat = _inline(schema, defs, ())
    except _RecursiveRefError:
        return _strip_titles(schema)
    return _strip_titles(flat)


def _inline(node: Any, defs: dict[str, Any], stack: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, stack) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEFS_PREFIX):
        name = ref.removeprefix(_DEFS_PREFIX)
        if name in stack:
            raise _RecursiveRefError(name)
        target = _inline(defs[name], defs, (*stack, name))
        # Keywords beside the $ref (description, default) refine the referenced schema.
        siblings = {k: _inline(v, defs, stack) for k, v in node.items() if k != "$ref"}
        return {**target, **siblings}
    return {
        key: value if key in _DATA_KEYWORDS else _inline(value, defs, stack)
        for key, value in node.items()
        if key != "$defs"
    }


def _strip_titles(node: Any) -> Any:
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _DATA_KEYWORDS:
            out[key] = value
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        else:
            out[key] = _strip_titles(value)
    return out
