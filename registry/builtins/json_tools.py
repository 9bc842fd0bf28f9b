"""Built-in JSON tools: parse, validate against a schema, extract by path."""

from __future__ import annotations

import re
from typing import Any

import jsonschema
import orjson

from registry.tags import Tag
from registry.tool import Tool

__all__ = ["extract", "json_tools", "parse", "validate"]

_PATH_PART = re.compile(r"\.?([^.\[\]]+)|\[(-?\d+)\]|\[\"([^\"]*)\"\]|\['([^']*)'\]")
_MAX_ERRORS = 20


def parse(text: str) -> Any:
    """Parse JSON text and return it normalised (or say where it is malformed).

    Args:
        text: The JSON text.
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None


def validate(document: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """Check a JSON document against a JSON Schema; list every violation.

    Args:
        document: The document, as JSON or as JSON text.
        schema: The JSON Schema (draft 2020-12 unless `$schema` says otherwise).
    """
    value = _document(document)
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValueError(f"the schema is invalid: {exc.message}") from None
    # No registry is given, so a remote $ref is never fetched.
    errors = sorted(validator_class(schema).iter_errors(value), key=lambda e: list(e.path))
    return {
        "valid": not errors,
        "errors": [
            {"path": _render_path(error.absolute_path), "message": error.message}
            for error in errors[:_MAX_ERRORS]
        ],
    }


def extract(document: Any, path: str) -> Any:
    """Pick a value out of a JSON document by path, such as `$.items[0].name` or `a.b[-1]`.

    Args:
        document: The document, as JSON or as JSON text.
        path: Dotted keys and [index] steps; a leading `$` is optional.
    """
    value = _document(document)
    walked = "$"
    for key in _steps(path):
        if isinstance(key, int) and isinstance(value, list):
            if not -len(value) <= key < len(value):
                raise ValueError(f"{walked} has {len(value)} items; [{key}] is out of range")
            value = value[key]
        elif isinstance(value, dict) and str(key) in value:
            value = value[str(key)]
        else:
            raise ValueError(f"{walked} has no {key!r}")
        walked += f"[{key}]" if isinstance(key, int) else f".{key}"
    return value


def json_tools() -> list[Tool]:
    """The JSON tools."""
    return [
        Tool.from_function(
            fn, namespace="json", tags=[Tag.READ_ONLY], idempotent=True, source="builtin"
        )
        for fn in (parse, validate, extract)
    ]


def _document(document: Any) -> Any:
    if isinstance(document, str):
        try:
            return orjson.loads(document)
        except orjson.JSONDecodeError:
            return document
    return document


def _steps(path: str) -> list[str | int]:
    text = path.strip()
    text = text[1:] if text.startswith("$") else text
    steps: list[str | int] = []
    position = 0
    while position < len(text):
        match = _PATH_PART.match(text, position)
        if match is None or match.end() == position:
            raise ValueError(f"cannot read the path at {text[position:]!r}")
        name, index, double, single = match.groups()
        steps.append(int(index) if index is not None else (name or double or single or ""))
        position = match.end()
    return steps


def _render_path(parts: Any) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)
