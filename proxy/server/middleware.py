"""The edge as one ASGI callable (`Edge`): the request context and its route, the drain, the
telemetry, the client key check, then the router, in that order.

One frame on the request's task rather than a layer each: every resumption of the task
passes through each frame that awaits (bench/instructions.py counts them). The drain's and
the telemetry's parts live in `telemetry/`, the router in `dispatch.py`.
"""

from __future__ import annotations

import logging

from ..errors import ProxyError
from ..telemetry import Telemetry
from .asgi import Receive, Scope, Send, send_json
from .auth import Authenticator
from .context import RequestContext, new_context
from .dispatch import Router, Running
from .routes import MCP, misrouted_error, route_of
from .routing import direct

log = logging.getLogger("toolwire.auth")


class Edge:
    """Serves one request through the edge's parts, outermost first; each sees only what the
    ones before it let through:

    1. the request context: its id (the client's or a new one) and the route table's row for
       its path, where every later part reads them;
    2. the drain: counts the running work it waits for; while it drains, answers a new
       request 503 unless its route is served then (counted and logged by
       `Telemetry.account`, as the telemetry never began);
    3. the telemetry (`Telemetry.serve`): the response gets the request id (and, on a turn,
       the proxy's overhead); at the end, the summary line, the metrics and the span;
    4. the client key check, on every route that is not open, once the lifespan has built it
       (`running.keys`, with `auth:` configured); the upstream then gets the request's
       headers without the key, unless it is forwarded. `/mcp` also takes OAuth access
       tokens of the trusted issuer (`mcp_server.oauth`). A refusal is a 401 (or the rate
       limit's 429) in the route's error shape; on a path with `/v1` missing or doubled, the
       404 that says so (the key may be right, the path is not);
    5. the router (`dispatch.Router`).
    """

    def __init__(self, router: Router, running: Running, telemetry: Telemetry) -> None:
        self.router = router
        self._route = direct(router)
        self._running = running
        self._telemetry = telemetry
        self._drain = telemetry.drain

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._route(scope, receive, send)
            return
        context = new_context(scope)
        route = context.route = route_of(scope["path"])
        drain = self._drain
        if drain.draining and route.draining != "served":
            await drain.refuse(scope, send)
            self._telemetry.account(scope)
            return
        waited = drain.admit(scope["method"])
        try:
            served = self._telemetry.serve(context, scope, receive, send)
            try:
                keys = self._running.keys
                if keys is not None and not route.open:
                    # Checked in a call that returns, so that no frame of its stays on the
                    # request's task while the router serves it.
                    refused = await self._refusal(keys, context, scope)
                    if refused is not None:
                        headers = {**refused.headers, "x-request-id": context.request_id}
                        await send_json(served.send, refused.status, route.shape(refused), headers)
                        return
                await self._route(scope, served.receive, served.send)
            finally:
                served.end(scope)
        finally:
            if waited:
                drain.leave()  # last: the drain's last request may stop the server

    async def _refusal(
        self, keys: Authenticator, context: RequestContext, scope: Scope
    ) -> ProxyError | None:
        """None when the caller may go on (its principal and the upstream's headers set on
        `context`), else why not: a 401 or 429, or the 404 of a path with `/v1` missing or
        doubled."""
        try:
            bearer = context.route is MCP
            context.principal = await keys.authenticate(context.headers, bearer=bearer)
        except Exception as exc:
            if isinstance(exc, ProxyError):
                error = misrouted_error(scope) or exc
            else:
                log.exception("checking the caller of request %s failed", context.request_id)
                error = ProxyError("the caller could not be checked (an internal error)")
            return error
        context.headers = keys.upstream_headers(context.headers)
        return None
