"""How every admin API route takes its request and answers an error: a bounded body, and
every refusal in the proxy's error shape (OpenAI's `{"error": {message, type, param, code}}`)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.types import Message

from ..config import ServerConfig
from ..errors import ProxyError

_DEFAULT_LIMIT = ServerConfig().max_body_bytes
_CODES = {
    401: "invalid_api_key",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "request_too_large",
    415: "unsupported_media_type",
    422: "invalid_value",
    503: "not_ready",
}
"""The `code` of an admin error by its status, when the error names none itself."""


class ErrorFields(BaseModel):
    message: str
    type: str
    param: str | None
    """The invalid field of a 422 (`body.timeout_s`, `query.limit`)."""
    code: str | None


class ErrorBody(BaseModel):
    """Every admin error: OpenAI's error shape, as on the proxy's routes."""

    error: ErrorFields


ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in (
        (401, "no key, or an unknown one"),
        (403, "a client key; a foreign Host or Origin; no key configured and not loopback"),
        (404, "no such tool, namespace, source or pending approval"),
        (409, "a tag edit the configuration does not allow"),
        (413, "a body past server.max_body_bytes"),
        (415, "a change without Content-Type: application/json"),
        (422, "an invalid parameter or body field, named in param"),
    )
}
"""The errors every admin operation may answer, for its OpenAPI document."""


def error_body(
    status: int, message: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """An admin error as the proxy's routes answer theirs: OpenAI's error shape."""
    error = ProxyError(message, status=status, param=param, code=code or _CODES.get(status))
    error.type = "invalid_request_error" if status < 500 else "api_error"
    return error.body()


def error_response(
    status: int,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """`error_body` as a response."""
    body = error_body(status, message, param=param, code=code)
    return JSONResponse(body, status_code=status, headers=headers)


class BodyTooLargeError(HTTPException):
    """A request body past `server.max_body_bytes`: a 413 in the admin's error shape."""

    def __init__(self, limit: int) -> None:
        detail = f"the request body exceeds {limit} bytes (server.max_body_bytes)"
        # The rest of the body is not read: the connection cannot carry another request.
        super().__init__(413, detail, headers={"connection": "close"})


class AdminRoute(APIRoute):
    """An API route whose request body may hold at most `server.max_body_bytes` (413 past
    it), and whose validation errors are 422s even for input JSON cannot hold (`NaN`)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handler(request: Request) -> Response:
            try:
                return await handle(bounded(request, _limit_of(request)))
            except RequestValidationError as exc:
                return invalid(exc)

        return handler


def bounded(request: Request, limit: int) -> Request:
    """`request` with a body that may hold at most `limit` bytes.

    A declared `Content-Length` over the limit is refused before anything is read; a body
    without one is counted as it arrives and refused at the chunk that passes the limit, so
    no request has the admin hold more than that.

    Raises:
        BodyTooLargeError: the declared length is over the limit (later: when the body is
            read and passes it).
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLargeError(limit)
    receive = request.receive
    received = 0

    async def counted() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                # FastAPI passes an HTTP error raised while it reads the body on as it is.
                raise BodyTooLargeError(limit)
        return message

    return Request(request.scope, counted)


def invalid(exc: RequestValidationError) -> Response:
    """A 422 naming each invalid field (`body.timeout_s: Input should be greater than 0`), the
    first in `param`. The input is not echoed: a number JSON cannot hold (`NaN`) would not
    encode, which made FastAPI's own answer a 500."""
    problems = exc.errors()
    fields = [".".join(str(part) for part in problem.get("loc", ())) for problem in problems]
    message = "; ".join(
        f"{field}: {problem.get('msg', '')}" if field else str(problem.get("msg", ""))
        for field, problem in zip(fields, problems, strict=True)
    )
    return error_response(422, message or "invalid request", param=fields[0] if fields else None)


def _limit_of(request: Request) -> int:
    runtime = getattr(request.app.state, "admin", None)
    return runtime.services.server.max_body_bytes if runtime is not None else _DEFAULT_LIMIT
