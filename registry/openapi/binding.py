"""Placing a tool call's arguments into an HTTP request where the operation says."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import orjson

from registry.openapi.operations import Operation, Param

__all__ = ["ArgumentError", "HttpRequest", "bind_request"]

_TEMPLATE = re.compile(r"\{([^{}]+)\}")
# Header values must not smuggle a second header or a second request (CR/LF), nor NUL.
_UNSAFE_HEADER = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


class ArgumentError(ValueError):
    """The arguments cannot make a request; the message is for the model."""


@dataclass(slots=True, unsafe_hash=True)
class HttpRequest:
    """A request ready to send: `url` is fully percent-encoded.

    Not changed once made, though not frozen: one is made per call, and a frozen dataclass sets
    each field through `object.__setattr__` (about four times the cost); it compares and
    hashes as a frozen one would."""

    method: str
    url: str
    headers: dict[str, str]
    json: Any = None
    has_body: bool = False


def bind_request(
    operation: Operation,
    base_url: str,
    arguments: Mapping[str, Any],
    static_headers: Mapping[str, str],
) -> HttpRequest:
    """Build the request for `operation` from a call's arguments.

    `static_headers` (the configured headers and auth) win over header parameters.

    Raises:
        ArgumentError: a required argument is missing, an argument is unknown, or a value
            cannot be placed (an empty path segment, a header with CR/LF).
    """
    _check_names(operation, arguments)
    if not operation.params and "{" not in operation.path:
        # The usual JSON operation: nothing to place in the path, query or headers.
        headers = dict(static_headers)
        url = base_url.rstrip("/") + operation.path
    else:
        url, headers = _placed(operation, base_url, arguments, static_headers)
    has_body, body = _body(operation, arguments)
    if has_body and operation.body is not None:
        media_type = operation.body.media_type
        headers["Content-Type"] = "application/json" if "*" in media_type else media_type
    return HttpRequest(operation.method, url, headers, body, has_body)


def _placed(
    operation: Operation,
    base_url: str,
    arguments: Mapping[str, Any],
    static_headers: Mapping[str, str],
) -> tuple[str, dict[str, str]]:
    """The URL and headers with the operation's path, query, header and cookie parameters."""
    by_name = {p.name: p for p in operation.params if p.location == "path"}
    path = _TEMPLATE.sub(lambda m: _path_value(by_name, m.group(1), arguments), operation.path)
    query: list[tuple[str, str]] = []
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for param in operation.params:
        if param.argument not in arguments or arguments[param.argument] is None:
            continue
        value = arguments[param.argument]
        if param.location == "query":
            query.extend(_query_pairs(param, value))
        elif param.location == "header":
            headers[param.name] = _header_value(param.name, value)
        elif param.location == "cookie":
            cookies.append(f"{param.name}={quote(_text(value), safe='')}")
    if cookies:
        headers["Cookie"] = "; ".join(cookies)
    overridden = {name.lower() for name in static_headers}
    headers = {k: v for k, v in headers.items() if k.lower() not in overridden}
    headers.update(static_headers)
    url = base_url.rstrip("/") + path
    if query:
        url += "?" + urlencode(query, quote_via=quote)
    return url, headers


def _check_names(operation: Operation, arguments: Mapping[str, Any]) -> None:
    expected = operation.parameters["properties"]
    required = operation.parameters["required"]
    # Loops that make nothing when the names are right (the usual call); the lists only then.
    for name in arguments:
        if name not in expected:
            unknown = sorted(set(arguments) - set(expected))
            listed = ", ".join(expected) or "no arguments"
            raise ArgumentError(f"unexpected arguments {', '.join(unknown)} (expected: {listed})")
    for name in required:
        if arguments.get(name) is None:
            missing = [name for name in required if arguments.get(name) is None]
            raise ArgumentError(f"missing required arguments: {', '.join(missing)}")


def _path_value(params: dict[str, Param], name: str, arguments: Mapping[str, Any]) -> str:
    param = params.get(name)
    if param is None:
        raise ArgumentError(f"the path template names {{{name}}}, which has no parameter")
    value = arguments[param.argument]
    if isinstance(value, list):
        text = ",".join(_text(item) for item in value)
    elif isinstance(value, dict):
        text = ",".join(f"{k},{_text(v)}" for k, v in value.items())
    else:
        text = _text(value)
    if not text:
        raise ArgumentError(f"path parameter {param.argument!r} must not be empty")
    # safe="" encodes "/", "?" and "#"; dot segments are encoded too, or "." and ".." would
    # be resolved away by the client or the server and move the request to another path.
    encoded = quote(text, safe="")
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


def _query_pairs(param: Param, value: Any) -> list[tuple[str, str]]:
    if isinstance(value, list):
        items = [_text(item) for item in value]
        return (
            [(param.name, item) for item in items]
            if param.explode
            else [(param.name, ",".join(items))]
        )
    if isinstance(value, dict):
        if param.style == "deepObject":
            return [(f"{param.name}[{k}]", _text(v)) for k, v in value.items()]
        if param.explode:
            return [(str(k), _text(v)) for k, v in value.items()]
        return [(param.name, ",".join(f"{k},{_text(v)}" for k, v in value.items()))]
    return [(param.name, _text(value))]


def _header_value(name: str, value: Any) -> str:
    text = ",".join(_text(v) for v in value) if isinstance(value, list) else _text(value)
    if _UNSAFE_HEADER.search(text) or not text.isascii():
        raise ArgumentError(f"header {name!r} must be printable ASCII without line breaks")
    return text


def _body(operation: Operation, arguments: Mapping[str, Any]) -> tuple[bool, Any]:
    body = operation.body
    if body is None:
        return False, None
    if body.argument is not None:
        if body.argument in arguments:
            return True, arguments[body.argument]
        return False, None
    fields = {name: arguments[name] for name in body.properties if name in arguments}
    if not fields and not body.required:
        return False, None
    return True, fields


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, str | int | float):
        return str(value)
    return orjson.dumps(value).decode()
