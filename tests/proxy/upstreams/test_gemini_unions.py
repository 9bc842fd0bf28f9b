"""The Gemini request fix scans a schema's JSON before walking it for unions: the scan
never hides a union the walk finds, and passes plain schemas without a walk."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.upstreams.gemini_fixes import _has_wide_union, _may_have_union

WIDE: list[dict[str, Any]] = [
    {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    {"type": "object", "properties": {"x": {"oneOf": [{"type": "number"}, {"type": "array"}]}}},
    {"type": "object", "properties": {"x": {"type": ["string", "integer", "null"]}}},
    {"type": "array", "items": [{"type": "object", "properties": {"y": {"type": ["a", "b"]}}}]},
    {"$defs": {"d": {"anyOf": [{"type": "string"}, {"type": "object"}, {"type": "null"}]}}},
]
NARROW: list[dict[str, Any]] = [
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    {"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
    {"type": "object", "properties": {"x": {"type": ["string", "null"]}}},
    {"type": "object", "description": "takes anyOf or oneOf", "properties": {}},
    {"type": "object", "properties": {"type": {"type": "string", "enum": ["a", "b"]}}},
    {},
]


@pytest.mark.parametrize("schema", WIDE)
def test_a_wide_union_is_found(schema: dict[str, Any]) -> None:
    assert _may_have_union(schema)
    assert _has_wide_union(schema)


@pytest.mark.parametrize("schema", NARROW)
def test_no_wide_union_whether_scanned_or_walked(schema: dict[str, Any]) -> None:
    assert not (_may_have_union(schema) and _has_wide_union(schema))
    assert not _has_wide_union(schema)


def test_plain_schemas_and_unjsonable_ones() -> None:
    assert not _may_have_union(NARROW[0])
    assert _may_have_union({1: {"anyOf": []}})  # not JSON: walked
