"""Turning a model's raw tool-call arguments into validated keyword arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from registry.errors import InvalidArgumentsError

__all__ = ["bind_arguments", "parse_arguments"]

_MAX_REPORTED_ERRORS = 8


def parse_arguments(raw: str | Mapping[str, Any]) -> dict[str, Any]:
    """Decode the arguments a model sent: JSON text, or an object as Ollama sends it.

    Raises:
        InvalidArgumentsError: kind "invalid_json" for bad JSON, "invalid_arguments" for a
            JSON value that is not an object.
    """
    if raw.__class__ is not str and isinstance(raw, Mapping):  # text first: no ABC check
        return dict(raw)
    if not raw.strip():
        return {}
    value = _loads(raw)
    if isinstance(value, str) and value.strip().startswith("{"):
        # Some models double-encode: the arguments are a JSON string holding the object.
        value = _loads(value)
    if not isinstance(value, dict):
        raise InvalidArgumentsError(
            "invalid_arguments", f"arguments must be a JSON object, got {_json_type(value)}"
        )
    return value


def bind_arguments(
    model: type[BaseModel] | None, arguments: dict[str, Any], *, strict: bool = False
) -> dict[str, Any]:
    """Validate and coerce `arguments` with `model`; return the function's keyword arguments.

    With `strict`, values must already have their JSON type ("2" is not an integer).

    Raises:
        InvalidArgumentsError: kind "invalid_arguments", listing each field and its problem.
    """
    if model is None:
        return arguments
    try:
        if strict:
            # JSON-mode strictness: "2" is refused for an int, but a string still becomes
            # an enum member or a datetime, as JSON itself has no such types.
            instance = model.model_validate_json(_dumps(arguments), strict=True)
        else:
            # What `model_validate` does with no options, without its wrapper's frame.
            instance = model.__pydantic_validator__.validate_python(arguments)
    except ValidationError as exc:
        raise InvalidArgumentsError("invalid_arguments", _explain(exc, model)) from exc
    # Attribute access, not model_dump(), so nested models and dataclasses reach the
    # function as instances of the types it declared. `__pydantic_fields__` is what the
    # `model_fields` class property returns, read without the property's two calls.
    fields = model.__pydantic_fields__
    return {(info.alias or name): getattr(instance, name) for name, info in fields.items()}


def _dumps(arguments: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(arguments)
    except orjson.JSONEncodeError as exc:
        # Only arguments given as an object can hold what JSON text cannot (huge integers).
        raise InvalidArgumentsError("invalid_arguments", f"arguments are not JSON: {exc}") from exc


def _loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InvalidArgumentsError("invalid_json", f"arguments are not valid JSON: {exc}") from exc


def _explain(exc: ValidationError, model: type[BaseModel]) -> str:
    errors = exc.errors(include_url=False, include_context=False)
    parts = [_explain_one(error, model) for error in errors[:_MAX_REPORTED_ERRORS]]
    if len(errors) > _MAX_REPORTED_ERRORS:
        parts.append(f"and {len(errors) - _MAX_REPORTED_ERRORS} more errors")
    return "; ".join(parts)


def _explain_one(error: Any, model: type[BaseModel]) -> str:
    path = _path(error["loc"])
    if error["type"] == "missing":
        return f"field '{path}' is required"
    if error["type"] == "extra_forbidden":
        if len(error["loc"]) == 1:
            expected = ", ".join(info.alias or name for name, info in model.model_fields.items())
            return f"unexpected field '{path}' (expected: {expected or 'no arguments'})"
        return f"unexpected field '{path}'"
    if not path:
        return str(error["msg"])
    return f"field '{path}': {error['msg']}"


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"
