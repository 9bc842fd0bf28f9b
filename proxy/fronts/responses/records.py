"""A stored response: `GET` and `DELETE /v1/responses/{id}`, `POST /v1/responses/{id}/cancel`,
and `GET /v1/responses/{id}?stream=true&starting_after=N` (a background response's events).

A response is its key's alone: to another key it is not found, exactly as an unknown id.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ... import sse
from ...errors import BadRequestError, ProxyError
from ...server.asgi import Receive, Scope, Send, until_disconnect
from ...server.context import context_of
from ...server.services import Services
from ...state.base import StoredResponse
from ...state.runs import RunEvent
from ..exchange import openai_error_body, stream
from .background import BackgroundRuns


class ResponseNotFoundError(ProxyError):
    """No stored response has the id the client named."""

    status = 404
    type = "invalid_request_error"
    code = "response_not_found"


class ResponseRecords:
    """`GET`, `DELETE` and cancel of a stored response (a background one as it stands)."""

    def __init__(self, services: Services) -> None:
        self._services = services
        self._store = services.responses

    async def __call__(self, request: Request) -> Response:
        response_id = request.path_params["response_id"]
        principal = context_of(cast(Scope, request.scope)).principal
        stored = await self._store.get(response_id)
        if stored is None or not stored.visible_to(principal):
            raise not_found(response_id)
        if request.method == "POST":
            return JSONResponse(await self._background().cancel(response_id, stored))
        if request.method == "DELETE":
            return await self._delete(response_id, stored)
        if _flag(request, "stream"):
            if not stored.response.get("background"):
                raise BadRequestError(
                    "only a background response can be streamed again: this one was not "
                    "created with background: true",
                    param="stream",
                )
            after = _starting_after(request)
            return _EventStream(self._background().follow(response_id, after), self._services)
        if stored.response.get("background"):
            stored = await self._background().current(response_id, stored)
        return JSONResponse(stored.response)

    async def _delete(self, response_id: str, stored: StoredResponse) -> Response:
        # Owners never change, so the response read is the one deleted; gone meanwhile
        # (another request's delete), it is not found either.
        background = self._services.background
        if background is not None:
            await background.forget(response_id, stored)
        if not await self._store.delete(response_id):
            raise not_found(response_id)
        return JSONResponse({"id": response_id, "object": "response", "deleted": True})

    def _background(self) -> BackgroundRuns:
        background = self._services.background
        if background is None:
            raise ProxyError("background responses are not served", status=503)
        return background


def not_found(response_id: str) -> ResponseNotFoundError:
    return ResponseNotFoundError(f"no response with id {response_id!r}", param="response_id")


def _flag(request: Request, name: str) -> bool:
    value = request.query_params.get(name, "false").lower()
    if value not in ("true", "false", "1", "0"):
        raise BadRequestError(f"{name} must be true or false, not {value!r}", param=name)
    return value in ("true", "1")


def _starting_after(request: Request) -> int | None:
    """The `starting_after` query parameter: a sequence number (None when absent).

    Raises:
        BadRequestError: it is not a whole number of zero or more.
    """
    value = request.query_params.get("starting_after")
    if value is None:
        return None
    if not value.isdigit():
        raise BadRequestError(
            f"starting_after must be a sequence number (0 or more), not {value!r}",
            param="starting_after",
        )
    return int(value)


class LogStream:
    """Renders a background run's kept events as the SSE frames they were sent as."""

    def start(self) -> bytes:
        return b""

    def frames(self, event: RunEvent) -> list[bytes]:
        return [sse.event_json(event.kind, event.data)]

    def error(self, exc: ProxyError) -> list[bytes]:
        # The run goes on: the client resumes after the last number it saw.
        return []


class _EventStream(Response):
    """A background run's events as an event stream, ended when the client leaves."""

    def __init__(self, events: AsyncIterator[RunEvent], services: Services) -> None:
        super().__init__(media_type="text/event-stream")
        self._events = events
        self._keepalive_s = services.keepalive_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # type: ignore[override]
        context = context_of(scope)
        renderer = LogStream()
        work = stream(self._events, renderer, send, context, openai_error_body, self._keepalive_s)
        await until_disconnect(receive, work)
