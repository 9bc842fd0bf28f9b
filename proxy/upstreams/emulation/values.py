"""Argument values converted to the type the tool's schema gives them: one converter for every
format that carries values as text (`xml`, `glm`, DSML), or whose typed values may still miss
the schema (DSML's `null` for a string, `3.0` for a whole number).

A value that fits none of the schema's types is left as it was (text stays text), for the
argument validation to report to the model.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from .literals import NotLiteral, literal_value
from .repairs import Repair

_INTEGER = re.compile(r"[-+]?[0-9]+")
_ORDER = ("null", "integer", "number", "boolean", "object", "array", "string")
"""The order text is tried in: the narrowest reading first, a string last."""
_ALIASES = {
    "float": "number",
    "double": "number",
    "int": "integer",
    "bool": "boolean",
    "str": "string",
    "dict": "object",
    "list": "array",
}
"""Type names schemas written by hand use for JSON Schema's own (vLLM's tests meet `float`)."""
_WRAPPERS = ("arguments", "input")
_NOTHING = object()


def schema_types(schema: Any) -> frozenset[str]:
    """The JSON types a schema allows: its `type` (a name or a list), those of its `anyOf` and
    `oneOf` options, or, for an enum without a type, those of its members."""
    if not isinstance(schema, Mapping):
        return frozenset()
    kind = schema.get("type")
    names = [kind] if isinstance(kind, str) else [t for t in kind or () if isinstance(t, str)]
    types = {_ALIASES.get(name, name) for name in names}
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        for option in options if isinstance(options, list) else ():
            types |= schema_types(option)
    if not types and isinstance(schema.get("enum"), list):
        types = {_json_type(member) for member in schema["enum"]}
    return frozenset(types)


def convert(
    value: Any,
    schema: Any,
    *,
    lenient: bool = True,
    repairs: list[Repair] | None = None,
    typed: bool = False,
) -> Any:
    """The value as the schema's type.

    Text is read as the first type it fits, in the order null, integer, number, boolean,
    object, array, string; text under a schema with no type is read as JSON when it is JSON.
    A typed value that fits is kept (a whole `number` as an integer); one that does not, under
    a schema that allows a string, becomes its JSON text (`null` for a string is `"null"`).
    Lenient, objects and arrays may be written as Python literals (a `py_literal` repair).
    `typed`: the value was written typed (JSON, Gemma's syntax), so a string stays a string
    where the schema gives no type. An object's members and an array's items are converted in
    turn (typed) by the schema's `properties` and `items`, where an object or array that misses
    a string's schema is kept as written.
    """
    found = _convert(value, schema, lenient, repairs, typed)
    if not isinstance(schema, Mapping):
        return found
    properties, items = schema.get("properties"), schema.get("items")
    if isinstance(found, dict) and isinstance(properties, Mapping):
        return {
            key: convert(item, properties[key], lenient=lenient, repairs=repairs, typed=True)
            if key in properties
            else item
            for key, item in found.items()
        }
    if isinstance(found, list) and isinstance(items, Mapping):
        return [
            convert(item, items, lenient=lenient, repairs=repairs, typed=True) for item in found
        ]
    return found


def _convert(
    value: Any, schema: Any, lenient: bool, repairs: list[Repair] | None, typed: bool
) -> Any:
    types = schema_types(schema)
    if isinstance(value, str):
        if not types:
            return value if typed else _json_or_text(value)
        found = _from_text(value, types, lenient, repairs if repairs is not None else [])
        return value if found is _NOTHING else found
    if not types:
        return value
    kind = _json_type(value)
    if kind == "number" and "number" in types and _whole(value):
        return int(value)
    if kind in types or (kind == "integer" and "number" in types):
        return value
    if kind == "number" and "integer" in types and _whole(value):
        return int(value)
    if "string" in types and not (typed and kind in ("object", "array")):
        return json.dumps(value, ensure_ascii=False)
    return value


def typed_arguments(
    raw: Mapping[str, Any],
    parameters: Any,
    lenient: bool,
    repairs: list[Repair],
    *,
    typed: bool = False,
) -> dict[str, Any]:
    """Each value converted by its property's schema (`typed`: as `convert` takes it); lenient,
    a lone wrapper unwrapped (a `wrapper_unwrapped` repair)."""
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    properties = properties if isinstance(properties, Mapping) else {}
    arguments = {
        key: convert(value, properties.get(key), lenient=lenient, repairs=repairs, typed=typed)
        for key, value in raw.items()
    }
    inner = unwrapped(arguments, parameters) if lenient else None
    if inner is None:
        return arguments
    repairs.append(Repair.WRAPPER_UNWRAPPED)
    return inner


def unwrapped(arguments: dict[str, Any], parameters: Any) -> dict[str, Any] | None:
    """The inner object of a lone `arguments` or `input` parameter the tool does not have, when
    its keys are the tool's own (the model wrapped its arguments once more); else None."""
    if len(arguments) != 1:
        return None
    [(key, inner)] = arguments.items()
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    if key not in _WRAPPERS or not isinstance(properties, Mapping) or key in properties:
        return None
    if isinstance(inner, str):
        inner = _json_or_text(inner)
    if not isinstance(inner, dict) or not inner or not set(inner) <= set(properties):
        return None
    return {name: convert(item, properties[name]) for name, item in inner.items()}


def _from_text(text: str, types: frozenset[str], lenient: bool, repairs: list[Repair]) -> Any:
    stripped = text.strip()
    for kind in _ORDER:
        if kind not in types:
            continue
        if kind == "string":
            return text
        found = _read(kind, stripped, lenient, repairs)
        if found is not _NOTHING:
            return found
    return _NOTHING


def _read(kind: str, text: str, lenient: bool, repairs: list[Repair]) -> Any:
    if kind == "null":
        return None if text.lower() == "null" else _NOTHING
    if kind == "boolean":
        return text.lower() == "true" if text.lower() in ("true", "false") else _NOTHING
    if kind in ("integer", "number"):
        number = _number(text)
        if number is None or (kind == "integer" and not isinstance(number, int)):
            return _NOTHING
        return number
    if kind in ("object", "array"):
        loaded = _structure(text, lenient, repairs)
        return loaded if isinstance(loaded, dict if kind == "object" else list) else _NOTHING
    return _NOTHING


def _number(text: str) -> int | float | None:
    """The number the text writes, a whole one as an integer (`3.0` is 3); None if none."""
    if _INTEGER.fullmatch(text):
        return int(text)
    try:
        number = float(text)
    except ValueError:
        return None
    if not math.isfinite(number) or "_" in text:
        return None
    return int(number) if _whole(number) else number


def _whole(number: Any) -> bool:
    return isinstance(number, float) and number.is_integer() and abs(number) < 2**53


def _structure(text: str, lenient: bool, repairs: list[Repair]) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        if not lenient:
            return None
    try:
        value = literal_value(text)
    except NotLiteral:
        return None
    repairs.append(Repair.PY_LITERAL)
    return value


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
