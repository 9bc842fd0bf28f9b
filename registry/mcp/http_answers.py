"""What the Streamable HTTP transport reads off an MCP server's HTTP answer: its JSON-RPC
messages, whether it is an event stream, the rest of it (so the connection is kept), where a
redirect leads, and why a connection failed, in the user's terms."""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any

import aiohttp
import anyio
import mcp_types as types
import orjson
from mcp.shared.message import SessionMessage
from yarl import URL

from registry.mcp.keepalive import DRAIN_BYTES, DRAIN_S
from registry.mcp.transport_streams import Item

__all__ = [
    "drain",
    "failure_reason",
    "is_events",
    "message_or_error",
    "redirect",
    "session_message",
]

log = logging.getLogger("toolwire.mcp")


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
    if (
        type(data) is dict
        and len(data) == 3
        and data.get("jsonrpc") == "2.0"
        and type(data.get("result")) is dict
        and type(data.get("id")) in (int, str)
    ):
        answer_id = data["id"] if request_id is None else request_id
        return SessionMessage(
            types.JSONRPCResponse.model_construct(
                jsonrpc="2.0", id=answer_id, result=data["result"]
            )
        )
    message = types.jsonrpc_message_adapter.validate_python(data, by_name=False)
    if request_id is not None and isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
        message.id = request_id
    return SessionMessage(message)


def is_events(response: aiohttp.ClientResponse) -> bool:
    return response.headers.get("content-type", "").lower().startswith("text/event-stream")


async def drain(response: aiohttp.ClientResponse) -> None:
    """Read what is left of an answer (the end of its stream, right after its response), so
    its connection goes back to the pool; one that does not end soon is closed."""
    content = response.content
    if content.at_eof():
        return
    received = 0
    with anyio.move_on_after(DRAIN_S), contextlib.suppress(aiohttp.ClientError, OSError):
        async for chunk in content.iter_any():
            received += len(chunk)
            if received > DRAIN_BYTES:
                break
    if not content.at_eof():
        response.close()


def redirect(response: aiohttp.ClientResponse, url: URL, method: str) -> URL | None:
    """Where a redirect that stays on the endpoint's origin leads, or None (not a redirect,
    or one not to follow: elsewhere, or a POST's that would not keep its method)."""
    if response.status not in (301, 302, 303, 307, 308):
        return None
    if method == "POST" and response.status not in (307, 308):
        return None
    location = response.headers.get("location")
    if not location:
        return None
    target = url.join(URL(location))
    same = (target.scheme, target.host, target.port) == (url.scheme, url.host, url.port)
    upgraded = (
        url.scheme == "http"
        and target.scheme == "https"
        and target.host == url.host
        and url.is_default_port()
        and target.is_default_port()
    )
    return target if same or upgraded else None


def failure_reason(exc: BaseException, url: URL) -> str:
    """Why a connection failed, in the user's terms."""
    address = f"{url.host}:{url.port}"
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return f"no connection to {address} in time"
    if isinstance(exc, TimeoutError):
        return f"no answer from {address} in time"
    if isinstance(exc, aiohttp.ClientConnectorError):
        errno = exc.os_error.errno
        why = os.strerror(errno) if errno else str(exc.os_error)
        return f"cannot connect to {address}: {why}"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return f"{address} closed the connection"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
