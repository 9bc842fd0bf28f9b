"""The operations of an OpenAPI document, each described as a tool's arguments."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, cast

from registry.openapi.document import Document, SpecError

__all__ = ["METHODS", "Body", "Operation", "Param", "read_operations", "server_url", "tool_name"]

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
Location = Literal["path", "query", "header", "cookie"]
_LOCATIONS: frozenset[str] = frozenset({"path", "query", "header", "cookie"})
# OpenAPI says header parameters with these names are ignored: the transport sets them.
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
_INVALID_NAME = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class Param:
    """A path, query, header or cookie parameter and the argument that carries it."""

    name: str
    argument: str
    location: Location
    required: bool
    style: str
    explode: bool


@dataclass(frozen=True, slots=True)
class Body:
    """The JSON request body: one `argument`, or (argument None) flattened `properties`."""

    argument: str | None
    properties: tuple[str, ...]
    required: bool
    media_type: str


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation: how to call it, and the JSON schema of its tool's arguments."""

    name: str
    method: str
    path: str
    description: str
    parameters: dict[str, Any]
    params: tuple[Param, ...]
    body: Body | None
    server_url: str | None
    operation_id: str | None
    spec_tags: tuple[str, ...]


def read_operations(document: Document) -> tuple[list[Operation], list[str]]:
    """Every operation of the document, and a note for each one that had to be skipped."""
    operations: list[Operation] = []
    problems: list[str] = []
    taken: set[str] = set()
    for path, method, item, raw in _walk(document, problems):
        try:
            operation = _operation(document, path, method, item, raw, taken)
        except SpecError as exc:
            problems.append(f"{method.upper()} {path}: skipped: {exc}")
            continue
        taken.add(operation.name)
        operations.append(operation)
    return operations, problems


def tool_name(operation_id: str | None, method: str, path: str) -> str:
    """A tool name from the operationId, else from method and path (`get_items_item_id`)."""
    text = operation_id or f"{method}_{path}"
    name = _INVALID_NAME.sub("_", text).strip("_-")
    return re.sub(r"__+", "_", name) or method


def _walk(
    document: Document, problems: list[str]
) -> Iterator[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    for path, raw_item in document.raw.get("paths", {}).items():
        try:
            item = document.deref(raw_item)
        except SpecError as exc:
            problems.append(f"{path}: skipped: {exc}")
            continue
        # In the spec's own order, so tools list the way the spec reads.
        for method, raw in item.items():
            if method in METHODS and isinstance(raw, dict):
                yield str(path), method, item, raw


def _operation(
    document: Document,
    path: str,
    method: str,
    item: dict[str, Any],
    raw: dict[str, Any],
    taken: set[str],
) -> Operation:
    operation_id = raw.get("operationId") if isinstance(raw.get("operationId"), str) else None
    name = _unique(tool_name(operation_id, method, path), taken)
    properties: dict[str, Any] = {}
    required: list[str] = []
    params = _params(document, item, raw, properties, required)
    body = _body(document, raw, properties, required)
    return Operation(
        name=name,
        method=method.upper(),
        path=path,
        description=_description(raw, method, path),
        parameters={"type": "object", "properties": properties, "required": required},
        params=tuple(params),
        body=body,
        server_url=_server_url(raw) or _server_url(item),
        operation_id=operation_id,
        spec_tags=tuple(str(tag) for tag in raw.get("tags", ()) if isinstance(tag, str)),
    )


def _params(
    document: Document,
    item: dict[str, Any],
    raw: dict[str, Any],
    properties: dict[str, Any],
    required: list[str],
) -> list[Param]:
    merged: dict[tuple[str, Location], dict[str, Any]] = {}
    # Operation-level parameters override path-level ones with the same name and location.
    for node in [*item.get("parameters", ()), *raw.get("parameters", ())]:
        spec = document.deref(node)
        name, location = spec.get("name"), spec.get("in")
        if not isinstance(name, str) or location not in _LOCATIONS:
            raise SpecError(f"a parameter without a valid name and location: {spec}")
        location = cast(Location, location)
        if location == "header" and name.lower() in _IGNORED_HEADERS:
            continue
        merged[(name, location)] = spec
    params: list[Param] = []
    for (name, location), spec in merged.items():
        argument = name if name not in properties else f"{location}_{name}"
        is_required = location == "path" or spec.get("required") is True
        style = spec.get("style") or ("form" if location in ("query", "cookie") else "simple")
        explode = spec.get("explode", style == "form")
        params.append(Param(name, argument, location, is_required, style, bool(explode)))
        properties[argument] = _described(document.schema(_param_schema(spec)), spec)
        if is_required:
            required.append(argument)
    return params


def _param_schema(spec: dict[str, Any]) -> Any:
    if "schema" in spec:
        return spec["schema"]
    content = spec.get("content")
    if isinstance(content, dict) and content:
        media = next(iter(content.values()))
        return media.get("schema", {}) if isinstance(media, dict) else {}
    return {}


def _body(
    document: Document, raw: dict[str, Any], properties: dict[str, Any], required: list[str]
) -> Body | None:
    if "requestBody" not in raw:
        return None
    spec = document.deref(raw["requestBody"])
    is_required = spec.get("required") is True
    content = spec.get("content")
    if not isinstance(content, dict):
        content = {}
    media_type = next((m for m in content if _is_json(m)), None)
    if media_type is None:
        if is_required:
            raise SpecError(f"request body types {sorted(content)} are not supported (JSON only)")
        return None
    media = content[media_type] if isinstance(content[media_type], dict) else {}
    schema = document.schema(media.get("schema", {}))
    flat = _flattenable(schema)
    if flat is not None and not set(flat["properties"]) & set(properties):
        # The object's fields become top-level arguments: simpler for a model to fill in.
        properties.update(flat["properties"])
        if is_required:
            required.extend(p for p in flat.get("required", ()) if p in flat["properties"])
        return Body(None, tuple(flat["properties"]), is_required, media_type)
    argument = next(a for a in ("body", "request_body", "body_") if a not in properties)
    properties[argument] = _described(schema, spec)
    if is_required:
        required.append(argument)
    return Body(argument, (), is_required, media_type)


def _flattenable(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The schema as one plain object with properties, merging `allOf` parts; else None."""
    parts = schema.get("allOf") if set(schema) <= {"allOf", "description", "type"} else [schema]
    if not isinstance(parts, list) or not parts:
        return None
    properties: dict[str, Any] = {}
    required: list[str] = []
    for part in parts:
        if not isinstance(part, dict) or not isinstance(part.get("properties"), dict):
            return None
        if part.get("type", "object") != "object" or {"oneOf", "anyOf", "not"} & set(part):
            return None
        properties.update(part["properties"])
        required.extend(r for r in part.get("required", ()) if isinstance(r, str))
    return {"type": "object", "properties": properties, "required": required}


def _is_json(media_type: str) -> bool:
    kind = media_type.split(";")[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json") or kind == "*/*"


def _described(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    description = spec.get("description")
    if isinstance(description, str) and description and "description" not in schema:
        return {**schema, "description": description}
    return schema


def _description(raw: dict[str, Any], method: str, path: str) -> str:
    parts = [raw.get("summary"), raw.get("description")]
    texts = [p.strip() for p in parts if isinstance(p, str) and p.strip()]
    if len(texts) == 2 and texts[1].startswith(texts[0]):
        texts = texts[1:]
    text = "\n\n".join(texts) or f"{method.upper()} {path}"
    return f"(deprecated) {text}" if raw.get("deprecated") is True else text


def _server_url(node: dict[str, Any]) -> str | None:
    servers = node.get("servers")
    if isinstance(servers, list) and servers and isinstance(servers[0], dict):
        url = servers[0].get("url")
        if isinstance(url, str):
            return server_url(servers[0])
    return None


def server_url(server: dict[str, Any]) -> str:
    """A server object's URL with its `{variables}` replaced by their defaults."""
    url = str(server.get("url", "/"))
    variables = server.get("variables")
    if isinstance(variables, dict):
        for name, variable in variables.items():
            if isinstance(variable, dict) and "default" in variable:
                url = url.replace(f"{{{name}}}", str(variable["default"]))
    return url


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    return next(f"{name}_{n}" for n in range(2, len(taken) + 3) if f"{name}_{n}" not in taken)
