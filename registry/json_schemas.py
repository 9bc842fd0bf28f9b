"""Argument checks against a JSON schema, for tools described by a schema, not a signature.

MCP and OpenAPI tools come with JSON schemas; this is their counterpart of the pydantic
model a Python function's arguments are checked with. The jsonschema library is called
here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import SchemaError
from jsonschema.validators import validator_for
from referencing.exceptions import Unresolvable

from registry.errors import InvalidArgumentsError, RegistryError

__all__ = ["SchemaArguments"]

_MAX_REPORTED = 8


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

    def __call__(self, arguments: dict[str, Any]) -> None:
        """Check `arguments`.

        Raises:
            InvalidArgumentsError: they do not match (the message lists up to eight problems),
                or the schema cannot check them: a `$ref` that resolves to nothing, or
                references that recurse without end.
        """
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
