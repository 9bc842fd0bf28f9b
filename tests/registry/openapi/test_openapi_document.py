"""Parsing specs, resolving $refs, and OpenAPI schemas as JSON Schema."""

from __future__ import annotations

import json

import pytest
import yaml

from registry.openapi import SpecError, parse_spec
from registry.openapi.document import MAX_REF_DEPTH


def spec(version: str = "3.1.0", **components: object) -> dict[str, object]:
    return {
        "openapi": version,
        "info": {"title": "t", "version": "1"},
        "paths": {},
        "components": {"schemas": components},
    }


def test_json_and_yaml_parse_to_the_same_document() -> None:
    raw = spec(Pet={"type": "object", "properties": {"name": {"type": "string"}}})
    from_json = parse_spec(json.dumps(raw))
    from_yaml = parse_spec(yaml.safe_dump(raw))
    assert from_json.raw == from_yaml.raw == raw


def test_yaml_keys_and_dates_become_json_values() -> None:
    text = "openapi: 3.0.3\npaths: {}\ninfo: {version: 2024-01-02}\nx: {200: ok}\n"
    document = parse_spec(text)
    assert document.raw["info"]["version"] == "2024-01-02"
    assert document.raw["x"] == {"200": "ok"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"swagger": "2.0", "paths": {}}', "Swagger 2.0"),
        ('{"openapi": "4.0", "paths": {}}', "only OpenAPI 3.0 and 3.1"),
        ("[1, 2]", "not a mapping"),
        ("{not json", "neither JSON nor YAML"),
        ("a: &x [*x]\nopenapi: 3.1.0\n", "contain itself"),
    ],
    ids=["swagger2", "version", "list", "broken", "recursive-alias"],
)
def test_bad_specs_are_refused(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec(text)


def test_refs_are_inlined_with_their_siblings() -> None:
    document = parse_spec(
        json.dumps(
            spec(
                Name={"type": "string", "title": "Name", "maxLength": 20},
                Pet={
                    "type": "object",
                    "title": "Pet",
                    "properties": {
                        "name": {"$ref": "#/components/schemas/Name", "description": "its name"},
                        "title": {"type": "string"},
                    },
                },
            )
        )
    )
    schema = document.schema({"$ref": "#/components/schemas/Pet"})
    assert schema == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 20, "description": "its name"},
            # A property called "title" is data, not the title keyword.
            "title": {"type": "string"},
        },
    }


def test_a_recursive_schema_is_cut_with_an_open_schema() -> None:
    node = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
        },
    }
    document = parse_spec(json.dumps(spec(Node=node)))
    schema = document.schema({"$ref": "#/components/schemas/Node"})
    # Node is kept once; its reference back to itself is cut and accepts anything.
    assert schema["properties"]["name"] == {"type": "string"}
    assert schema["properties"]["children"] == {"type": "array", "items": {}}
    assert "$ref" not in json.dumps(schema)


def test_mutually_recursive_schemas_terminate() -> None:
    document = parse_spec(
        json.dumps(
            spec(
                A={"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
                B={"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}},
            )
        )
    )
    schema = document.schema({"$ref": "#/components/schemas/A"})
    assert schema["properties"]["b"]["properties"]["a"] == {}


def test_deep_reference_chains_are_bounded() -> None:
    chain = {
        f"S{i}": {
            "type": "object",
            "properties": {"next": {"$ref": f"#/components/schemas/S{i + 1}"}},
        }
        for i in range(MAX_REF_DEPTH + 10)
    }
    document = parse_spec(json.dumps(spec(**chain)))
    schema = document.schema({"$ref": "#/components/schemas/S0"})
    depth = 0
    while "properties" in schema:
        schema = schema["properties"]["next"]
        depth += 1
    assert depth == MAX_REF_DEPTH


def test_a_dangling_ref_is_an_error_and_external_refs_are_open() -> None:
    document = parse_spec(json.dumps(spec()))
    with pytest.raises(SpecError, match="points at nothing"):
        document.schema({"$ref": "#/components/schemas/Missing"})
    assert document.schema({"$ref": "other.yaml#/Pet"}) == {}
    with pytest.raises(SpecError, match="external"):
        document.deref({"$ref": "other.yaml#/Pet"})


def test_ref_tokens_are_unescaped() -> None:
    raw = spec()
    raw["components"] = {"schemas": {"a/b~c": {"type": "integer"}}}
    document = parse_spec(json.dumps(raw))
    assert document.schema({"$ref": "#/components/schemas/a~1b~0c"}) == {"type": "integer"}


def test_openapi_30_nullable_and_example_become_json_schema() -> None:
    document = parse_spec(json.dumps(spec("3.0.3")))
    schema = document.schema(
        {
            "type": "string",
            "nullable": True,
            "example": "red",
            "enum": ["red", "blue"],
            "x-internal": True,
            "xml": {"name": "c"},
        }
    )
    assert schema == {
        "type": ["string", "null"],
        "enum": ["red", "blue", None],
        "examples": ["red"],
    }


def test_openapi_31_type_arrays_and_examples_pass_through() -> None:
    document = parse_spec(json.dumps(spec("3.1.0")))
    source = {"type": ["string", "null"], "examples": ["a", None], "const": "a"}
    assert document.schema(source) == source
