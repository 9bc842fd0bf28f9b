"""How every admin API route takes its request: a bounded body, and 422s JSON can hold."""

from __future__ import annotations

import math
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.types import Message

from ..config import ServerConfig

_DEFAULT_LIMIT = ServerConfig().max_body_bytes


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
    """FastAPI's 422 answer, but a number JSON cannot hold (`NaN`, `Infinity`) is echoed as
    text: as a number it fails to encode, and FastAPI's own answer becomes a 500."""
    return JSONResponse({"detail": _finite(jsonable_encoder(exc.errors()))}, status_code=422)


def _limit_of(request: Request) -> int:
    runtime = getattr(request.app.state, "admin", None)
    return runtime.services.server.max_body_bytes if runtime is not None else _DEFAULT_LIMIT


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list):
        return [_finite(item) for item in value]
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    return value
