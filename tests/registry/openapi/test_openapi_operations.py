"""Operations as tools: names, descriptions, and where each argument goes."""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from urllib.parse import unquote

import pytest

from registry.openapi import parse_spec, read_operations
from registry.openapi.binding import ArgumentError, bind_request
from registry.openapi.operations import Operation, tool_name

PET = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
}


def operations(paths: dict[str, Any], version: str = "3.1.0") -> dict[str, Operation]:
    raw = {
        "openapi": version,
        "info": {"title": "t", "version": "1"},
        "paths": paths,
        "components": {
            "schemas": {"Pet": PET},
            "parameters": {
                "Id": {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
            },
        },
    }
    found, problems = read_operations(parse_spec(json.dumps(raw)))
    assert not problems, problems
    return {op.name: op for op in found}


@pytest.mark.parametrize(
    ("operation_id", "method", "path", "expected"),
    [
        ("getPet", "get", "/pets/{id}", "getPet"),
        ("pets.list v2", "get", "/pets", "pets_list_v2"),
        (None, "get", "/pets/{pet_id}/toys", "get_pets_pet_id_toys"),
        (None, "delete", "/", "delete"),
    ],
)
def test_tool_names(operation_id: str | None, method: str, path: str, expected: str) -> None:
    assert tool_name(operation_id, method, path) == expected


def test_every_method_is_an_operation_and_duplicate_names_are_numbered() -> None:
    ok = {"responses": {"200": {"description": "ok"}}}
    found = operations(
        {
            "/a": {
                m: dict(ok) for m in ("get", "put", "post", "delete", "patch", "head", "options")
            },
            "/b": {"get": {**ok, "operationId": "same"}, "post": {**ok, "operationId": "same"}},
        }
    )
    assert {op.method for op in found.values() if op.path == "/a"} == {
        "GET",
        "PUT",
        "POST",
        "DELETE",
        "PATCH",
        "HEAD",
        "OPTIONS",
    }
    assert {"same", "same_2"} <= set(found)


def test_parameters_from_path_item_and_operation_with_refs() -> None:
    found = operations(
        {
            "/pets/{id}": {
                "parameters": [{"$ref": "#/components/parameters/Id"}],
                "get": {
                    "operationId": "get_pet",
                    "summary": "Get a pet",
                    "description": "Looks the pet up by id.",
                    "parameters": [
                        {
                            "name": "fields",
                            "in": "query",
                            "schema": {"type": "array", "items": {"type": "string"}},
                        },
                        {
                            "name": "X-Trace",
                            "in": "header",
                            "description": "trace id",
                            "schema": {"type": "string"},
                        },
                        {"name": "Accept", "in": "header", "schema": {"type": "string"}},
                    ],
                },
            }
        }
    )
    op = found["get_pet"]
    assert op.description == "Get a pet\n\nLooks the pet up by id."
    assert [(p.name, p.location) for p in op.params] == [
        ("id", "path"),
        ("fields", "query"),
        ("X-Trace", "header"),
    ]
    assert op.parameters["required"] == ["id"]
    assert op.parameters["properties"]["X-Trace"] == {"type": "string", "description": "trace id"}


def test_an_object_body_is_flattened_into_arguments() -> None:
    body = {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}},
    }
    op = operations({"/pets": {"post": {"operationId": "add", "requestBody": body}}})["add"]
    assert op.body is not None and op.body.argument is None
    assert set(op.parameters["properties"]) == {"name", "age"}
    assert op.parameters["required"] == ["name"]
    request = bind_request(op, "http://svc", {"name": "Rex", "age": 3}, {})
    assert (request.method, request.url, request.json) == (
        "POST",
        "http://svc/pets",
        {"name": "Rex", "age": 3},
    )
    assert request.headers["Content-Type"] == "application/json"


def test_a_body_that_clashes_or_is_not_an_object_is_one_body_argument() -> None:
    clash = {
        "operationId": "rename",
        "parameters": [{"name": "name", "in": "query", "schema": {"type": "string"}}],
        "requestBody": {"content": {"application/json": {"schema": PET}}},
    }
    array = {
        "operationId": "bulk",
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "array", "items": PET}}},
        },
    }
    found = operations({"/pets": {"put": clash, "post": array}})
    assert found["rename"].body is not None and found["rename"].body.argument == "body"
    assert "body" not in found["rename"].parameters["required"]
    bulk = found["bulk"]
    assert bulk.parameters["required"] == ["body"]
    request = bind_request(bulk, "http://svc", {"body": [{"name": "a"}]}, {})
    assert request.json == [{"name": "a"}]


def test_a_required_body_that_is_not_json_skips_the_operation() -> None:
    raw = {
        "openapi": "3.0.3",
        "paths": {
            "/upload": {
                "post": {"requestBody": {"required": True, "content": {"multipart/form-data": {}}}},
                "get": {"operationId": "ok"},
            }
        },
    }
    found, problems = read_operations(parse_spec(json.dumps(raw)))
    assert [op.name for op in found] == ["ok"]
    assert "POST /upload" in problems[0] and "JSON only" in problems[0]


PATH_OP = {
    "/files/{name}/v{version}": {
        "get": {
            "operationId": "read",
            "parameters": [
                {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},
                {"name": "version", "in": "path", "required": True, "schema": {"type": "integer"}},
                {"name": "tag", "in": "query", "schema": {"type": "array"}},
                {"name": "flat", "in": "query", "explode": False, "schema": {"type": "array"}},
                {
                    "name": "deep",
                    "in": "query",
                    "style": "deepObject",
                    "schema": {"type": "object"},
                },
                {"name": "raw", "in": "query", "schema": {"type": "boolean"}},
                {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                {"name": "session", "in": "cookie", "schema": {"type": "string"}},
            ],
        }
    }
}


@pytest.mark.parametrize("value", ["../admin?x=1#y", "a/b", "..", ".", "%2e%2e", "naïve name"])
def test_path_values_are_one_encoded_segment(value: str) -> None:
    op = operations(PATH_OP)["read"]
    request = bind_request(op, "http://svc/api/", {"name": value, "version": 2}, {})
    segment, _, rest = request.url.removeprefix("http://svc/api/files/").partition("/")
    assert rest == "v2"
    assert not {"/", "?", "#"} & set(segment)
    assert segment not in (".", "..")
    assert unquote(segment) == value


def test_query_header_and_cookie_placement() -> None:
    op = operations(PATH_OP)["read"]
    request = bind_request(
        op,
        "http://svc",
        {
            "name": "n",
            "version": 1,
            "tag": ["a b", "c&d"],
            "flat": [1, 2],
            "deep": {"k": "v"},
            "raw": True,
            "X-Trace": "t-1",
            "session": "s;1",
        },
        {"X-Api-Key": "secret"},
    )
    assert request.url == (
        "http://svc/files/n/v1?tag=a%20b&tag=c%26d&flat=1%2C2&deep%5Bk%5D=v&raw=true"
    )
    assert request.headers == {"X-Trace": "t-1", "Cookie": "session=s%3B1", "X-Api-Key": "secret"}
    assert not request.has_body


def test_configured_headers_win_over_header_parameters() -> None:
    op = operations(PATH_OP)["read"]
    request = bind_request(
        op, "http://svc", {"name": "n", "version": 1, "X-Trace": "model"}, {"x-trace": "operator"}
    )
    assert request.headers == {"x-trace": "operator"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"name": "n", "version": 1, "X-Trace": "a\r\nX-Evil: 1"}, "without line breaks"),
        ({"name": "", "version": 1}, "must not be empty"),
        ({"version": 1}, "missing required arguments: name"),
        ({"name": "n", "version": 1, "nope": 1}, "unexpected arguments nope"),
    ],
    ids=["crlf-header", "empty-path", "missing", "unknown"],
)
def test_arguments_that_cannot_make_a_request(arguments: dict[str, Any], message: str) -> None:
    op = operations(PATH_OP)["read"]
    with pytest.raises(ArgumentError, match=message):
        bind_request(op, "http://svc", arguments, {})


def test_a_body_only_operation_keeps_the_configured_headers_and_checks_every_name() -> None:
    body = {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}},
    }
    op = operations({"/pets/": {"post": {"operationId": "add", "requestBody": body}}})["add"]
    assert not op.params
    static = {"Authorization": "Bearer k"}
    request = bind_request(op, "http://svc/v1/", {"name": "Rex"}, static)
    assert request.url == "http://svc/v1/pets/" and request.json == {"name": "Rex"}
    assert request.headers == {"Authorization": "Bearer k", "Content-Type": "application/json"}
    assert static == {"Authorization": "Bearer k"}  # the configured headers are not changed
    with pytest.raises(ArgumentError, match=r"unexpected arguments a, b \(expected: name, age\)"):
        bind_request(op, "http://svc", {"b": 1, "name": "Rex", "a": 2}, {})
    with pytest.raises(ArgumentError, match=r"missing required arguments: name$"):
        bind_request(op, "http://svc", {"age": 3, "name": None}, {})
    # A path template with no parameter for it is still refused, not sent as it is.
    templated = dataclasses.replace(op, path="/pets/{id}")
    with pytest.raises(ArgumentError, match=r"names \{id\}, which has no parameter"):
        bind_request(templated, "http://svc", {"name": "Rex"}, {})
