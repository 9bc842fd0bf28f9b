"""What the Streamable HTTP transport writes: a message's body and the headers a request's
`_meta` gives it; and whether the environment sends a URL through a proxy (which Toolwire's
HTTP client does not know, so such a source keeps the SDK's)."""

from __future__ import annotations

import urllib.request
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types
import orjson

from registry.propagation import TRACE_HEADER_NAMES

__all__ = ["proxied", "request_body", "trace_headers"]


def proxied(url: str) -> bool:
    """Whether the environment sends `url` through a proxy (`HTTP_PROXY`/`HTTPS_PROXY`, not
    bypassed by `NO_PROXY`): then the SDK's httpx client, which honours it, carries it."""
    parts = urlsplit(url)
    if parts.scheme not in urllib.request.getproxies():
        return False
    return not urllib.request.proxy_bypass(parts.hostname or "")


def request_body(message: types.JSONRPCMessage) -> bytes:
    """A message's JSON as the SDK writes it (`model_dump_json(by_alias=True,
    exclude_unset=True)`); a request with all of its four fields set (the usual one: no
    aliases, no extra fields) by orjson from them, the same bytes for a third of the cost."""
    if message.__class__ is types.JSONRPCRequest and len(message.__pydantic_fields_set__) == 4:
        request: Any = message
        fields = {
            "jsonrpc": request.jsonrpc,
            "id": request.id,
            "method": request.method,
            "params": request.params,
        }
        try:
            return orjson.dumps(fields)
        except TypeError:  # orjson's JSONEncodeError: an int past 64 bits, say
            pass
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode()


def trace_headers(request: types.JSONRPCRequest, headers: dict[str, str]) -> str | None:
    """Add a request's trace context (in its `_meta`) to `headers`; return the progress token
    of a `tools/call` (which tells the call its server's questions come with)."""
    meta = (request.params or {}).get("_meta")
    if type(meta) is not dict:
        return None
    for name in TRACE_HEADER_NAMES:
        value = meta.get(name)
        if type(value) is str:
            headers[name] = value
    token = meta.get("progressToken")
    if request.method != "tools/call" or type(token) not in (str, int):
        return None
    return str(token)
