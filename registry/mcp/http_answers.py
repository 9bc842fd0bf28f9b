"""What the Streamable HTTP transport reads off an MCP server's HTTP answer: its JSON-RPC
messages, whether it is an event stream, where a redirect leads, and why a connection failed,
in the user's terms."""

from __future__ import annotations

import logging
import os
from typing import Any
from urllib.parse import urljoin, urlsplit

import mcp_types as types
import orjson
from mcp.shared.message import SessionMessage

from registry import http1
from registry.mcp.transport_streams import Item

__all__ = [
    "content_type",
    "failure_reason",
    "header",
    "is_events",
    "message_or_error",
    "plain_result",
    "redirect",
    "session_message",
]

log = logging.getLogger("toolwire.mcp")

_DEFAULT_PORTS = {"http": 80, "https": 443}


def message_or_error(data: bytes, request_id: types.RequestId | None) -> Item:
    try:
        return session_message(orjson.loads(data), request_id)
    except (orjson.JSONDecodeError, ValueError) as exc:
        log.warning("MCP server sent an invalid message: %s", exc)
        return exc


def session_message(data: Any, request_id: types.RequestId | None) -> SessionMessage:
    """A message as the session takes it: an answer to a request as its model unvalidated
    beyond its envelope (the session validates the result), anything else validated. An
    answer on a request's own stream answers that request (as the SDK has it).

    Raises:
        ValueError: not a JSON-RPC message.
    """
    result = plain_result(data)
    if result is not None:
        answer_id = data["id"] if request_id is None else request_id
        return SessionMessage(
            types.JSONRPCResponse.model_construct(jsonrpc="2.0", id=answer_id, result=result)
        )
    message = types.jsonrpc_message_adapter.validate_python(data, by_name=False)
    if request_id is not None and isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
        message.id = request_id
    return SessionMessage(message)


def header(response: http1.Response, name: bytes, spelled: bytes) -> str:
    """The value of the answer's header `name` (in lower case; `spelled` its other usual
    spelling), "" when it has none. Looked up in the headers as they came, under the names
    servers send, before the parsed headers are made (a few calls where making them costs
    five a header)."""
    found = dict(response.raw_headers)
    value = found.get(name) or found.get(spelled)
    if value is not None:
        return value.decode("latin-1")
    return response.headers.get(name.decode(), "")


def plain_result(data: Any) -> dict[str, Any] | None:
    """The result of a plain answer (`{"jsonrpc": "2.0", "id": ..., "result": {...}}`, the
    usual one), else None."""
    if type(data) is dict and len(data) == 3 and data.get("jsonrpc") == "2.0":
        result = data.get("result")
        if type(result) is dict and type(data.get("id")) in (int, str):
            return result
    return None


def content_type(response: http1.Response) -> str:
    """The answer's content type, in lower case ("" when it names none)."""
    return header(response, b"content-type", b"Content-Type").lower()


def is_events(response: http1.Response) -> bool:
    return content_type(response).startswith("text/event-stream")


def redirect(status: int, headers: dict[str, str], url: str, method: str) -> str | None:
    """Where a redirect that stays on the endpoint's origin leads, or None (not a redirect,
    or one not to follow: elsewhere, or a POST's that would not keep its method)."""
    if status not in (301, 302, 303, 307, 308):
        return None
    if method == "POST" and status not in (307, 308):
        return None
    location = headers.get("location")
    if not location:
        return None
    try:
        here, there = _origin(url), _origin(urljoin(url, location))
    except ValueError:
        return None  # not a URL (a bad port, say)
    same = there == here
    upgraded = (
        here[0] == "http"
        and there[0] == "https"
        and there[1] == here[1]
        and here[2] == _DEFAULT_PORTS["http"]
        and there[2] == _DEFAULT_PORTS["https"]
    )
    return urljoin(url, location) if same or upgraded else None


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, parts.hostname, parts.port or _DEFAULT_PORTS.get(scheme)


def failure_reason(exc: BaseException, url: str) -> str:
    """Why a connection failed, in the user's terms."""
    parts = urlsplit(url)
    address = f"{parts.hostname}:{parts.port or _DEFAULT_PORTS.get(parts.scheme)}"
    if isinstance(exc, http1.ConnectTimeout):
        return f"no connection to {address} in time"
    if isinstance(exc, TimeoutError):
        return f"no answer from {address} in time"
    if isinstance(exc, http1.ConnectError):
        errno = exc.error.errno
        why = os.strerror(errno) if errno else str(exc.error)
        return f"cannot connect to {address}: {why}"
    if isinstance(exc, http1.Disconnected):
        return f"{address} closed the connection"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
