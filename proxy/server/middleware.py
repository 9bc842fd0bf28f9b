"""The edge's own layers: the request context, first, and the client key check, last before
the router. `create_app` composes them with the drain's and the telemetry's (`telemetry/`).

A layer that only prepares the request returns the next layer's awaitable rather than
awaiting it: it then adds no frame that every resumption of the request's task would pass
through (bench/instructions.py counts them). Each layer calls the next through `direct`, its
bound method.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable

from ..errors import ProxyError
from .asgi import Receive, Scope, Send, send_json
from .auth import Authenticator
from .context import context_of
from .dispatch import Running
from .routes import MCP, misrouted_error, route_of
from .routing import App, direct

log = logging.getLogger("toolwire.auth")


class RequestContextMiddleware:
    """Gives every request its `RequestContext` (its id, the client's or a new one) and the
    route table's row for its path, where every later layer reads them."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._next = direct(app)

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if scope["type"] == "http":
            context_of(scope).route = route_of(scope["path"])
        return self._next(scope, receive, send)


class AuthMiddleware:
    """Checks the client's key on every route that is not open, once the lifespan has built
    the check (`running.keys`, with `auth:` configured); the upstream then gets the request's
    headers without the key, unless it is forwarded. `/mcp` also takes OAuth access tokens
    of the trusted issuer (`mcp_server.oauth`).

    A refusal is a 401 (or the rate limit's 429) in the route's error shape; on a path with
    `/v1` missing or doubled, the 404 that says so (the key may be right, the path is not).
    """

    def __init__(self, app: App, running: Running) -> None:
        self.app = app
        self._next = direct(app)
        self._running = running

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        keys = self._running.keys
        if keys is None or scope["type"] != "http" or context_of(scope).route.open:
            return self._next(scope, receive, send)
        return self._checked(keys, scope, receive, send)

    async def _checked(
        self, keys: Authenticator, scope: Scope, receive: Receive, send: Send
    ) -> None:
        context = context_of(scope)
        try:
            bearer = context.route is MCP
            context.principal = await keys.authenticate(context.headers, bearer=bearer)
        except Exception as exc:
            if isinstance(exc, ProxyError):
                error = misrouted_error(scope) or exc
            else:
                log.exception("checking the caller of request %s failed", context.request_id)
                error = ProxyError("the caller could not be checked (an internal error)")
            headers = {**error.headers, "x-request-id": context.request_id}
            await send_json(send, error.status, context.route.shape(error), headers)
            return
        context.headers = keys.upstream_headers(dict(context.headers))
        await self._next(scope, receive, send)
