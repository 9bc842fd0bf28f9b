"""An OpenAPI 3.0/3.1 document: parsing, `$ref` resolution, and schemas as JSON Schema."""

from __future__ import annotations

import datetime
from typing import Any
from urllib.parse import unquote

import orjson
import yaml

from registry.errors import SourceLoadError

__all__ = ["Document", "SpecError", "parse_spec"]

MAX_REF_DEPTH = 32
"""Nesting of `$ref`s inlined into one schema; deeper references become `{}`."""
MAX_REF_EXPANSIONS = 5_000
"""`$ref`s inlined per schema; past this (diamond-shaped specs) they become `{}`."""
_MAX_REF_CHAIN = 16
# Keywords whose values map names to schemas: the names are data, not keywords.
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
# Keywords whose values are instance data, copied untouched.
_DATA_KEYWORDS = frozenset({"default", "const", "enum", "examples"})
# OpenAPI-only keywords that mean nothing to a JSON Schema consumer such as a model server.
_DROPPED = frozenset({"xml", "externalDocs", "discriminator", "nullable", "example"})


class SpecError(SourceLoadError):
    """The spec, or one operation in it, cannot be turned into tools."""


def parse_spec(text: str) -> Document:
    """Parse JSON or YAML text as an OpenAPI 3.x document.

    Raises:
        SpecError: not JSON or YAML, or not an OpenAPI 3 document.
    """
    try:
        if text.lstrip().startswith("{"):
            raw = orjson.loads(text)
        else:
            raw = _plain(yaml.safe_load(text), {})
    except (orjson.JSONDecodeError, yaml.YAMLError) as exc:
        raise SpecError(f"the spec is neither JSON nor YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise SpecError("the spec is not a mapping")
    version = raw.get("openapi")
    if not isinstance(version, str) or not version.startswith("3."):
        found = f"Swagger {raw['swagger']}" if "swagger" in raw else f"openapi: {version!r}"
        raise SpecError(f"only OpenAPI 3.0 and 3.1 are supported, found {found}")
    if not isinstance(raw.get("paths", {}), dict):
        raise SpecError("`paths` is not a mapping")
    return Document(raw)


class Document:
    """A parsed spec that resolves local `$ref`s (`#/components/...`)."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw

    def deref(self, node: Any) -> dict[str, Any]:
        """Follow a chain of `$ref`s to the object it names (a parameter, a request body).

        Raises:
            SpecError: the reference is external, dangling, circular or not an object.
        """
        seen: list[str] = []
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen or len(seen) >= _MAX_REF_CHAIN:
                raise SpecError(f"circular $ref {ref}")
            seen.append(ref)
            node = self.lookup(ref)
        if not isinstance(node, dict):
            raise SpecError(f"{seen[-1] if seen else 'an object'} is not an object")
        return node

    def lookup(self, ref: str) -> Any:
        """The value a local reference points at.

        Raises:
            SpecError: the reference is not local or points at nothing.
        """
        if not ref.startswith("#/"):
            raise SpecError(f"external $ref {ref!r} is not supported")
        node: Any = self.raw
        for token in ref[2:].split("/"):
            key = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise SpecError(f"$ref {ref!r} points at nothing")
        return node

    def schema(self, node: Any) -> dict[str, Any]:
        """A schema with every `$ref` inlined and OpenAPI-only keywords turned into JSON Schema.

        A reference back into itself (a recursive schema) is cut with the permissive `{}`.

        Raises:
            SpecError: a reference points at nothing.
        """
        if not isinstance(node, dict):
            return {}
        out = _Inliner(self).inline(node, ())
        return out if isinstance(out, dict) else {}


class _Inliner:
    def __init__(self, document: Document) -> None:
        self._document = document
        self._budget = MAX_REF_EXPANSIONS

    def inline(self, node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [self.inline(item, stack) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            return self._inline_ref(node, ref, stack)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if (
                key in _DROPPED
                or key.startswith("x-")
                or (key == "title" and isinstance(value, str))
            ):
                continue
            if key in _DATA_KEYWORDS:
                out[key] = value
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                out[key] = {name: self.inline(sub, stack) for name, sub in value.items()}
            else:
                out[key] = self.inline(value, stack)
        return _json_schema(node, out)

    def _inline_ref(self, node: dict[str, Any], ref: str, stack: tuple[str, ...]) -> Any:
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if ref in stack or len(stack) >= MAX_REF_DEPTH or self._budget <= 0:
            # Cut here: `{}` accepts anything, so the schema stays valid and finite.
            return self.inline(siblings, stack)
        if not ref.startswith("#/"):
            return self.inline(siblings, stack)
        self._budget -= 1
        target = self.inline(self._document.lookup(ref), (*stack, ref))
        # Keywords beside the $ref (a description, a default) refine the referenced schema.
        refined = self.inline(siblings, stack)
        return {**target, **refined} if isinstance(target, dict) else target


def _json_schema(source: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """Apply the OpenAPI 3.0 spellings `example` and `nullable` in JSON Schema's terms."""
    if "example" in source and "examples" not in out:
        out["examples"] = [source["example"]]
    if source.get("nullable") is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    return out


def _plain(value: Any, done: dict[int, Any], active: frozenset[int] = frozenset()) -> Any:
    """YAML values as JSON values: string keys, dates as ISO text; shared nodes stay shared.

    Raises:
        SpecError: an alias makes a node contain itself.
    """
    key = id(value)
    if key in active:
        raise SpecError("a YAML alias makes a node contain itself")
    if key in done:
        return done[key]
    if isinstance(value, dict):
        inner = active | {key}
        done[key] = {str(k): _plain(v, done, inner) for k, v in value.items()}
    elif isinstance(value, list):
        inner = active | {key}
        done[key] = [_plain(item, done, inner) for item in value]
    elif isinstance(value, datetime.date):
        return value.isoformat()
    else:
        return value
    return done[key]
