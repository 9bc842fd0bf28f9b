"""Request-fatal errors of the proxy, each rendered as an OpenAI error body."""

from __future__ import annotations

from typing import Any


class ProxyError(Exception):
    """Root of the proxy's errors: carries an HTTP status and OpenAI's error fields."""

    status = 500
    type = "api_error"
    code: str | None = None

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        status: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        """The OpenAI-shaped error body."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


class BadRequestError(ProxyError):
    """The client's request is malformed or asks for something unsupported."""

    status = 400
    type = "invalid_request_error"


class ModelNotFoundError(ProxyError):
    """No upstream serves the requested model."""

    status = 404
    type = "invalid_request_error"
    code = "model_not_found"


class PayloadTooLargeError(ProxyError):
    """The request body exceeds the configured limit."""

    status = 413
    type = "invalid_request_error"
    code = "request_too_large"


class RequestTimeoutError(ProxyError):
    """The client did not send its request in time."""

    status = 408
    type = "invalid_request_error"
    code = "request_timeout"


class UpstreamError(ProxyError):
    """The upstream model server failed or answered something unusable."""

    status = 502
    type = "api_error"
    code: str | None = "upstream_error"


class UpstreamStatusError(UpstreamError):
    """The upstream answered a 4xx that is the client's to see (status passed through)."""

    type = "invalid_request_error"
    code = None


class UpstreamTimeoutError(UpstreamError):
    """The upstream did not answer within a deadline."""

    status = 504
    code = "upstream_timeout"


class ClientDisconnectedError(ProxyError):
    """The client went away; nothing is rendered."""

    status = 499
    code = "client_disconnected"


class StateUnavailableError(ProxyError):
    """The shared state (Redis) cannot be reached; requests that need it cannot proceed."""

    status = 503
    type = "api_error"
    code = "state_unavailable"
