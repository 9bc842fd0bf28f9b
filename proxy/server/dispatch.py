"""The edge's last layer, the router: a front's POST straight to its handler, every other
path through Starlette's routes, which the route table builds."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.routing import Route as StarletteRoute

from ..errors import ProxyError
from .asgi import Receive, Scope, Send, send_json
from .context import context_of
from .routes import ROUTES, not_found
from .routing import App, MethodNotAllowedError, NotFoundError, Route, direct

if TYPE_CHECKING:
    from .auth import Authenticator
    from .services import Services


class Running:
    """What the lifespan builds on the services: each front's handler and the client key
    check; empty before it starts and after it ends."""

    def __init__(self) -> None:
        self.handlers: dict[str, App] = {}
        self.keys: Authenticator | None = None

    def bind(self, services: Services) -> None:
        self.keys = services.keys
        self.handlers = {r.path: direct(r.front(services)) for r in ROUTES if r.front is not None}

    def unbind(self) -> None:
        self.handlers = {}
        self.keys = None


class Router:
    """A front's POST straight to its handler, any other method on it a 405; every other
    path through Starlette's routes (`routes`).

    The fronts are the hot path: skipping Starlette's router and middleware stack there is
    measurable under load (bench/overhead.py).
    """

    def __init__(self, routes: App, running: Running) -> None:
        self._routes = direct(routes)
        self._running = running

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        # The handler's awaitable, not awaited here: no frame of the router's stays on the
        # request's task (see middleware.py).
        if scope["type"] == "http":
            route = context_of(scope).route
            if route.front is not None:
                if scope["method"] == "POST":
                    handler = self._running.handlers.get(route.path)
                    if handler is not None:
                        return handler(scope, receive, send)
                return self._refuse(route, scope, send)
        return self._routes(scope, receive, send)

    async def _refuse(self, route: Route, scope: Scope, send: Send) -> None:
        """A front's 405 to any method but POST; its 503 while its handler is not built."""
        error: ProxyError
        if scope["method"] == "POST":
            error = ProxyError("the proxy is not ready", status=503, code="not_ready")
        else:
            error = MethodNotAllowedError.on(scope["method"], route.path, ", ".join(route.methods))
        headers = {**error.headers, "x-request-id": context_of(scope).request_id}
        await send_json(send, error.status, route.shape(error), headers)


def starlette_routes(apps: Mapping[Route, App]) -> list[BaseRoute]:
    """Starlette's routes for every row but the fronts': an endpoint, or an app of its own
    (`apps`, those that were built)."""
    found: list[BaseRoute] = []
    for route in ROUTES:
        if route.endpoint is not None:
            found.append(StarletteRoute(route.path, route.endpoint, methods=list(route.methods)))
        elif route.subtree and route in apps:
            found.append(Mount(route.path, apps[route]))  # type: ignore[arg-type]
        elif route in apps:
            found.append(StarletteRoute(route.path, apps[route]))
    return found


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such route, a method the route does not take) in the
    shape of the route the path belongs to."""
    assert isinstance(exc, HTTPException)
    path = request.url.path
    headers = dict(exc.headers or {})
    error: ProxyError
    if exc.status_code == 405 and "Allow" in headers:
        error = MethodNotAllowedError.on(request.method, path, headers.pop("Allow"))
    elif exc.status_code == 404:
        root = str(request.base_url).rstrip("/")
        error = NotFoundError(not_found(request.method, path, root))
    else:
        error = ProxyError(str(exc.detail), status=exc.status_code)
        error.type = "invalid_request_error"
    headers.update(error.headers)
    shape = context_of(request.scope).route.shape  # type: ignore[arg-type]
    return JSONResponse(shape(error), status_code=error.status, headers=headers)


async def proxy_error(request: Request, exc: Exception) -> Response:
    """An endpoint's error, in OpenAI's shape."""
    assert isinstance(exc, ProxyError)
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)
