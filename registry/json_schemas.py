"""Argument checks against a JSON schema, for tools described by a schema, not a signature.

MCP and OpenAPI tools come with JSON schemas; this is their counterpart of the pydantic
model a Python function's arguments are checked with. The jsonschema library is called
here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from jsonschema import SchemaError
from jsonschema.validators import validator_for
from referencing.exceptions import Unresolvable

from registry.errors import InvalidArgumentsError, RegistryError

__all__ = ["SchemaArguments"]

_MAX_REPORTED = 8

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly"}
    | {"writeOnly"}
)
"""Keywords that describe a value and never decide whether it is valid."""
_OBJECT_KEYS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "$schema"}
_VALUE_KEYS = _ANNOTATIONS | {"type", "enum", "anyOf"}
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}
"""The exact classes a JSON value of each type arrives as (a float that is an integer, or
a subclass, is left to the full check)."""

_Check = Callable[[Any], bool]


class SchemaArguments:
    """Checks a call's arguments against one JSON schema; raises what the model should read.

    Raises:
        RegistryError: (on construction) the schema is not a valid JSON Schema.
    """

    def __init__(self, schema: Mapping[str, Any]) -> None:
        try:
            validator_class = validator_for(schema)
            validator_class.check_schema(schema)
        except SchemaError as exc:
            raise RegistryError(f"not a valid JSON Schema: {exc.message}") from exc
        self._validator = validator_class(schema)
        self._valid = _quick_check(schema)

    def __call__(self, arguments: dict[str, Any]) -> None:
        """Check `arguments`.

        Raises:
            InvalidArgumentsError: they do not match (the message lists up to eight problems),
                or the schema cannot check them: a `$ref` that resolves to nothing, or
                references that recurse without end.
        """
        if self._valid is not None and self._valid(arguments):
            return  # a plain schema the arguments evidently match: no full check needed
        try:
            errors = sorted(
                self._validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.path]
            )
        except Unresolvable as exc:
            message = f"the tool's schema has a reference that resolves to nothing: {exc}"
            raise InvalidArgumentsError("invalid_arguments", message) from exc
        except RecursionError as exc:
            message = "the tool's schema has references that recurse without end"
            raise InvalidArgumentsError("invalid_arguments", message) from exc
        if not errors:
            return
        parts = []
        for error in errors[:_MAX_REPORTED]:
            path = ".".join(str(part) for part in error.absolute_path)
            parts.append(f"field '{path}': {error.message}" if path else error.message)
        if len(errors) > _MAX_REPORTED:
            parts.append(f"and {len(errors) - _MAX_REPORTED} more errors")
        raise InvalidArgumentsError("invalid_arguments", "; ".join(parts))


def _quick_check(schema: Mapping[str, Any]) -> _Check | None:
    """For the plain object schema most tools have (properties of simple types, optional
    enum or anyOf of such, required, additionalProperties true or false), a check that says
    True only for arguments the full check accepts; anything it is unsure of gets False, and
    then the full check, which also words the errors. None for any other schema."""
    if not _plain_object(schema):
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    closed = schema.get("additionalProperties", True) is False
    checks: dict[str, _Check] = {}
    for name, sub in properties.items():
        check = _value_check(sub, 0)
        if check is None:
            return None
        checks[name] = check
    needed = tuple(required)

    def valid(arguments: Any) -> bool:
        if arguments.__class__ is not dict:
            return False
        for name in needed:
            if name not in arguments:
                return False
        for name, value in arguments.items():
            check = checks.get(name)
            if check is None:
                if closed:
                    return False
            elif not check(value):
                return False
        return True

    return valid


def _plain_object(schema: Any) -> bool:
    if not isinstance(schema, dict) or not schema.keys() <= _OBJECT_KEYS:
        return False
    if schema.get("type", "object") != "object" or "draft-03" in str(schema.get("$schema", "")):
        return False
    required = schema.get("required", [])
    return (
        isinstance(schema.get("properties", {}), dict)
        and isinstance(required, list)
        and all(isinstance(name, str) for name in required)
        and schema.get("additionalProperties", True) in (True, False)
    )


def _value_check(schema: Any, depth: int) -> _Check | None:
    if not isinstance(schema, dict) or not schema.keys() <= _VALUE_KEYS:
        return None
    parts: list[_Check] = []
    if "type" in schema:
        kinds = schema["type"]
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not isinstance(kinds, list) or not all(k in _TYPES for k in kinds):
            return None
        classes = tuple(cls for kind in kinds for cls in _TYPES[kind])
        parts.append(lambda value: value.__class__ in classes)
    if "enum" in schema:
        choices = schema["enum"]
        if not isinstance(choices, list):
            return None
        # Strings only: equality in JSON Schema tells 1 from true and 1.0, Python's does not.
        words = frozenset(choice for choice in choices if choice.__class__ is str)
        parts.append(lambda value: value.__class__ is str and value in words)
    if "anyOf" in schema:
        options = schema["anyOf"]
        if depth > 0 or not isinstance(options, list) or not options:
            return None
        checks = [_value_check(option, depth + 1) for option in options]
        if any(check is None for check in checks):
            return None
        alternatives = cast("list[_Check]", checks)
        parts.append(lambda value: any(check(value) for check in alternatives))
    if len(parts) == 1:
        return parts[0]
    return lambda value: all(part(value) for part in parts)
