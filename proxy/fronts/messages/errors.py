"""Anthropic's error shape: `{"type": "error", "error": {"type", "message"}}`."""

from __future__ import annotations

from typing import Any

from ...errors import ProxyError

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    504: "timeout_error",
}


def error_body(exc: ProxyError) -> dict[str, Any]:
    """The error as the Anthropic SDK expects it, by status."""
    return {
        "type": "error",
        "error": {"type": _TYPES.get(exc.status, _by_class(exc.status)), "message": exc.message},
    }


def _by_class(status: int) -> str:
    # Anthropic answers other client errors (405, 415, 431 ...) as invalid requests.
    return "invalid_request_error" if 400 <= status < 500 else "api_error"
