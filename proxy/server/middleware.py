"""The edge as one ASGI callable (`Edge`): the request context and its route, the drain, the
telemetry, the client key check, then the router, in that order.

No frame of its own on the request's task, rather than a layer each: every resumption of
the task passes through each frame that awaits (bench/instructions.py counts them). Its
parts run as the request begins (`Edge.begin_request`) and as it ends (the `end` it hands back):
under the server's protocol (`http_wire.py`) the router's awaitable is the task's own
coroutine, and the end the task's done callback; under any other server `Edge.__call__`
awaits it in one frame. The drain's and the telemetry's parts live in `telemetry/`, the
router in `dispatch.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from ..errors import ProxyError
from ..telemetry import Telemetry
from .asgi import Receive, Scope, Send, send_json
from .auth import Authenticator
from .context import RequestContext, new_context
from .dispatch import Router, Running
from .routes import MCP, misrouted_error, route_of
from .routing import direct

log = logging.getLogger("toolwire.auth")

Begun = tuple[Awaitable[None], Callable[[], None] | None]


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
    5. the router (`dispatch.Router`); a front's POST, with no key to check, straight to its
       handler, as the router would send it (a call less on every turn).
    """

    def __init__(self, router: Router, running: Running, telemetry: Telemetry) -> None:
        self.router = router
        self._route = direct(router)
        self._running = running
        self._telemetry = telemetry
        self._drain = telemetry.drain
        self._ids = telemetry.ids

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        run, end = self.begin_request(scope, receive, send)
        if end is None:
            await run
            return
        try:
            await run
        finally:
            end()

    def begin_request(self, scope: Scope, receive: Receive, send: Send) -> Begun:
        """The request of `scope` begun: what serves it, to await in its task, and what ends
        it (None: nothing), to call once that is over, however it ended. Called in the
        request's context (`__call__` does, or the server's protocol, which then runs the
        first as the request's task: `http_wire.Begins`)."""
        if scope["type"] != "http":
            return self._route(scope, receive, send), None
        context = new_context(scope, self._ids)
        route = context.route = route_of(scope["path"])
        drain = self._drain
        if drain.draining and route.draining != "served":
            return self._refuse(scope, send), None
        waited = drain.admit(scope["method"])
        try:
            served = self._telemetry.serve(context, scope, receive, send, drain if waited else None)
        except BaseException:
            if waited:
                drain.leave()
            raise
        try:
            if not served.told:  # the server does not tell the telemetry of a departure
                receive = served.receive
            running = self._running
            keys = running.keys
            if keys is not None and not route.open:
                return self._checked(keys, context, scope, receive, served.send), served.end
            if route.front is not None and scope["method"] == "POST":
                # A front's POST straight to its handler, as the router would send it.
                handler = running.handlers.get(route.path)
                if handler is not None:
                    return handler(scope, receive, served.send), served.end
            return self._route(scope, receive, served.send), served.end
        except BaseException:
            served.end()
            raise

    async def _refuse(self, scope: Scope, send: Send) -> None:
        await self._drain.refuse(scope, send)
        self._telemetry.account(scope)

    async def _checked(
        self,
        keys: Authenticator,
        context: RequestContext,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        """The router's answer once the client key is checked; the refusal's if it is not."""
        # Checked in a call that returns, so that no frame of its stays on the request's task
        # while the router serves it (this one does, only when keys are checked).
        refused = await self._refusal(keys, context, scope)
        if refused is not None:
            headers = {**refused.headers, "x-request-id": context.request_id}
            await send_json(send, refused.status, context.route.shape(refused), headers)
            return
        await self._route(scope, receive, send)

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
