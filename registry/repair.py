"""Repairs of the small mistakes local models make in tool calls, each named and logged."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from registry.arguments import parse_arguments
from registry.registry import ToolRegistry

__all__ = ["NameMatch", "Repair", "repair_call", "resolve_name"]

log = logging.getLogger("toolwire.repair")

_INTEGER = re.compile(r"^\s*[-+]?\d+\s*$")
_BOOLEANS = {"true": True, "false": False}
_SEPARATORS = re.compile(r"[-_.\s]")
_MAX_REF_DEPTH = 32


@dataclass(frozen=True, slots=True)
class Repair:
    """One change made to a call: `kind` names the repair, `path` where it was made."""

    kind: str
    """json_string, number_string, boolean_string, key_name or tool_name."""
    path: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} at {self.path or '(root)'}: {self.detail}"


@dataclass(frozen=True, slots=True)
class NameMatch:
    """The tool name a call meant, and the repair that found it (None for an exact match)."""

    name: str
    repair: Repair | None = None


def repair_call(
    arguments: str | Mapping[str, Any],
    schema: Mapping[str, Any],
    strict: bool = False,
    *,
    tool: str | None = None,
) -> tuple[dict[str, Any], list[Repair]]:
    """Parse a call's arguments and repair them against the tool's JSON schema.

    Repairs: JSON arrays and objects sent as strings, numbers and booleans sent as
    strings, keys that differ from a property in case, `-`/`_` or separators. With
    `strict`, nothing is repaired. Each repair is logged under `tool`.

    Raises:
        InvalidArgumentsError: the arguments are not JSON or not a JSON object.
    """
    parsed = parse_arguments(arguments)
    if strict:
        return parsed, []
    repairs: list[Repair] = []
    repaired = _Repairer(schema, repairs).value(parsed, schema, "", 0)
    for repair in repairs:
        log.info("repaired a call to %s: %s", tool or "a tool", repair)
    return repaired, repairs


def resolve_name(registry_or_names: ToolRegistry | Iterable[str], name: str) -> NameMatch | None:
    """The wire name a call's tool name means: exact first, then ignoring case and
    separators (`-`, `_`, `.`) when exactly one name matches; None when nothing does."""
    if isinstance(registry_or_names, ToolRegistry):
        tool = registry_or_names.resolve(name)
        if tool is not None:
            return NameMatch(registry_or_names.wire_name(tool))
        names = [registry_or_names.wire_name(t) for t in registry_or_names.list_tools()]
        qualified = {
            t.qualified_name: registry_or_names.wire_name(t) for t in registry_or_names.list_tools()
        }
    else:
        names = list(registry_or_names)
        if name in names:
            return NameMatch(name)
        qualified = {}
    wanted = _fold(name)
    matches = {wire for wire in names if _fold(wire) == wanted}
    matches |= {wire for q, wire in qualified.items() if _fold(q) == wanted}
    if len(matches) != 1:
        return None
    (match,) = matches
    repair = Repair("tool_name", "", f"{name!r} taken as {match!r}")
    log.info("repaired a tool name: %s", repair)
    return NameMatch(match, repair)


class _Repairer:
    def __init__(self, root: Mapping[str, Any], repairs: list[Repair]) -> None:
        self._defs: Mapping[str, Any] = root.get("$defs", {})
        self._repairs = repairs

    def value(self, value: Any, schema: Mapping[str, Any], path: str, depth: int) -> Any:
        if value.__class__ is str and schema.get("type") == "string" and _plain(schema):
            return value  # the common case, decided without building the type set
        if value.__class__ is dict and schema.get("type") == "object" and _plain(schema):
            # Every call's root (and a plain nested object): the schema is its own branch.
            return self._object(value, schema, path, depth)
        schema = self._resolve(schema, depth)
        types = _types(schema)
        if isinstance(value, str) and "string" not in types:
            value = self._from_string(value, types, path)
        if isinstance(value, dict):
            branch = self._branch(schema, "object", depth)
            if branch is not None:
                return self._object(value, branch, path, depth)
        if isinstance(value, list):
            branch = self._branch(schema, "array", depth)
            items = branch.get("items") if branch is not None else None
            if isinstance(items, Mapping):
                return [
                    self.value(v, items, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)
                ]
        return value

    def _from_string(self, text: str, types: set[str], path: str) -> Any:
        stripped = text.strip()
        if types & {"array", "object"} and stripped[:1] in ("[", "{"):
            try:
                parsed = orjson.loads(stripped)
            except orjson.JSONDecodeError:
                parsed = None
            wanted = {"array": list, "object": dict}
            if any(isinstance(parsed, wanted[t]) for t in types & {"array", "object"}):
                self._note("json_string", path, "a JSON string was decoded")
                return parsed
        if "integer" in types and _INTEGER.match(text):
            try:
                integer = int(text)
            except ValueError:
                # More digits than Python converts (sys.get_int_max_str_digits): validation
                # refuses the text as it stands.
                return text
            self._note("number_string", path, f"{text!r} taken as a number")
            return integer
        if "number" in types:
            try:
                number = float(text)
            except ValueError:
                number = math.nan
            if math.isfinite(number):
                self._note("number_string", path, f"{text!r} taken as a number")
                return int(number) if _INTEGER.match(text) else number
        if "boolean" in types and stripped.lower() in _BOOLEANS:
            self._note("boolean_string", path, f"{text!r} taken as a boolean")
            return _BOOLEANS[stripped.lower()]
        return text

    def _object(
        self, value: dict[str, Any], schema: Mapping[str, Any], path: str, depth: int
    ) -> dict[str, Any]:
        properties: Mapping[str, Any] = schema.get("properties") or {}
        folded: dict[str, list[str]] | None = None  # built only for a key that is not a property
        out: dict[str, Any] = {}
        for key, item in value.items():
            target = key
            if key not in properties:
                if folded is None:
                    folded = {}
                    for name in properties:
                        folded.setdefault(_fold(name), []).append(name)
                candidates = folded.get(_fold(key), [])
                if len(candidates) == 1 and candidates[0] not in value:
                    target = candidates[0]
                    self._note("key_name", _join(path, key), f"key {key!r} taken as {target!r}")
            sub = properties.get(target)
            out[target] = (
                self.value(item, sub, _join(path, target), depth + 1)
                if sub.__class__ is dict or isinstance(sub, Mapping)
                else item
            )
        return out

    def _branch(self, schema: Mapping[str, Any], kind: str, depth: int) -> Mapping[str, Any] | None:
        if kind in _types(schema, own_only=True):
            return schema
        for option in (*schema.get("anyOf", ()), *schema.get("oneOf", ())):
            resolved = self._resolve(option, depth)
            if kind in _types(resolved, own_only=True):
                return resolved
        return None

    def _resolve(self, schema: Mapping[str, Any], depth: int) -> Mapping[str, Any]:
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and depth < _MAX_REF_DEPTH:
            target = self._defs.get(ref.removeprefix("#/$defs/"))
            if isinstance(target, Mapping):
                return target
        return schema

    def _note(self, kind: str, path: str, detail: str) -> None:
        self._repairs.append(Repair(kind, path, detail))


def _plain(schema: Mapping[str, Any]) -> bool:
    """Whether a schema has no reference or alternatives that could add a type."""
    return "anyOf" not in schema and "oneOf" not in schema and "$ref" not in schema


def _types(schema: Mapping[str, Any], *, own_only: bool = False) -> set[str]:
    declared = schema.get("type")
    types = {declared} if isinstance(declared, str) else set(declared or ())
    if "properties" in schema:
        types.add("object")
    if "items" in schema:
        types.add("array")
    if not own_only:
        for option in (*schema.get("anyOf", ()), *schema.get("oneOf", ())):
            if isinstance(option, Mapping):
                types |= _types(option)
    return types


def _fold(name: str) -> str:
    return _SEPARATORS.sub("", name).casefold()


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
