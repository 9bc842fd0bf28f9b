"""create_app(settings): the ASGI application and the objects it owns for its lifetime."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from policies import Gate, Guards, RulePolicy
from registry import Executor, SourceSet, ToolRegistry

from ..approvals.flow import ApprovalFlow
from ..approvals.webhook import WebhookApprover
from ..config import Settings
from ..errors import ProxyError, UpstreamError
from ..fronts import (
    ChatCompletions,
    CountTokens,
    Messages,
    ResponseRecords,
    Responses,
    anthropic_error_body,
)
from ..state import build_stores
from ..telemetry import Telemetry
from ..turn.catalog import Catalog
from ..turn.loop import ToolLoop
from ..upstreams.router import UpstreamRouter
from .asgi import Receive, Scope, Send, send_json
from .auth import Authenticator
from .context import context_of
from .hosts import AllowedHosts
from .routemap import Index, is_anthropic, misrouted, not_found
from .services import Services
from .sources import sources_for

if TYPE_CHECKING:
    from ..admin import AdminFront
    from ..fronts.mcp import McpFront

log = logging.getLogger("toolwire")


def create_app(
    settings: Settings,
    *,
    registry: ToolRegistry | None = None,
    sources: SourceSet | None = None,
    telemetry: Telemetry | None = None,
) -> ToolwireApp:
    """The proxy as an ASGI app.

    Given `sources` are taken as started (their tools in `registry`); otherwise the app
    starts the configured sources in its lifespan and closes them at shutdown. `telemetry`
    replaces the one `settings.telemetry` describes.

    Raises:
        ConfigError: traces are configured but OpenTelemetry is not installed.
    """
    hot = _HotRoutes()
    hosts = AllowedHosts(settings.server.allowed_hosts, bound=settings.server.host)
    mcp = _mcp_front(settings, hosts)
    admin = _admin_front(settings, hosts)
    telemetry = telemetry if telemetry is not None else Telemetry.from_settings(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(telemetry.close)
            started = await _start(settings, registry, sources, stack, telemetry.listener)
            services = telemetry.instrument(started)
            app.state.services = services
            hot.bind(services)
            stack.callback(hot.unbind)
            if mcp is not None:
                serving = mcp.serving(
                    services,
                    approval_timeout_s=settings.policy.approval_ttl_s,
                    max_body_bytes=settings.server.max_body_bytes,
                )
                await stack.enter_async_context(serving)
            if admin is not None:
                await stack.enter_async_context(admin.serving(services))
            log.info("toolwire ready: %d tools", len(services.registry))
            yield

    routes = Starlette(
        routes=[
            Route("/", Index(settings).page, methods=["GET"]),
            Route("/v1/models", _models, methods=["GET"]),
            Route("/v1/responses/{response_id}", hot.records, methods=["GET", "DELETE"]),
            Route("/healthz", _healthz, methods=["GET"]),
            Route("/readyz", _readyz, methods=["GET"]),
            Route("/metrics", telemetry.metrics_endpoint, methods=["GET"]),
            *([Route("/mcp", mcp)] if mcp is not None else []),
            *([Mount("/admin", admin.app)] if admin is not None else []),  # type: ignore[arg-type]
        ],
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error, ProxyError: _proxy_error},
    )
    return ToolwireApp(routes, hot, telemetry)


def _mcp_front(settings: Settings, hosts: AllowedHosts) -> McpFront | None:
    """`/mcp`, when enabled; the MCP SDK's server is imported only then (about a second)."""
    if not settings.mcp_server.enabled:
        return None
    from ..fronts.mcp import McpFront

    return McpFront(hosts)


def _admin_front(settings: Settings, hosts: AllowedHosts) -> AdminFront | None:
    """The admin front, when enabled; FastAPI is imported only then (about a second)."""
    if not settings.admin.enabled:
        return None
    from ..admin import AdminFront

    return AdminFront(settings.admin, settings.auth, hosts)


async def _start(
    settings: Settings,
    registry: ToolRegistry | None,
    sources: SourceSet | None,
    stack: contextlib.AsyncExitStack,
    listener: object,
) -> Services:
    """Build every long-lived object; `stack` closes each, also when a later one fails."""
    tools = registry if registry is not None else ToolRegistry()
    if sources is None:
        sources = sources_for(settings)
        await sources.start(tools)
        stack.push_async_callback(sources.aclose)
    executor = Executor.from_config(settings.execution, listeners=[listener])
    stack.callback(executor.close)
    approver = None
    if settings.policy.approval_webhook is not None:
        approver = WebhookApprover(settings.policy.approval_webhook)
        stack.push_async_callback(approver.aclose)
    stores = await build_stores(settings)
    stack.push_async_callback(stores.aclose)
    limiter = stores.limiter
    gate = Gate(
        RulePolicy(settings.policy),
        executor,
        guards=Guards(settings.guards, limiter) if settings.guards else None,
        limiter=limiter,
        approver=approver,
        think=settings.policy.think_augment,
        registry=tools,
    )
    upstreams = UpstreamRouter(settings.upstreams, modes=stores.modes)
    stack.push_async_callback(upstreams.aclose)
    approvals = ApprovalFlow(
        stores.approvals,
        stores.outcomes,
        ttl_s=settings.policy.approval_ttl_s,
        listed=stores.listed,
    )
    loop = ToolLoop(
        gate=gate,
        limits=settings.loop,
        turns=stores.turns,
        approvals=approvals,
        strict_arguments=settings.execution.strict_arguments,
    )
    return Services(
        registry=tools,
        sources=sources,
        catalog=Catalog(tools, gate),
        loop=loop,
        upstreams=upstreams,
        responses=stores.responses,
        server=settings.server,
        gate=gate,
        keys=Authenticator(settings.auth, limiter) if settings.auth is not None else None,
        approvals=approvals,
        keepalive_s=settings.loop.keepalive_s,
    )


class ToolwireApp:
    """The ASGI app: the fronts' POST routes dispatched straight to their handlers, the
    rest through the router.

    The fronts are the hot path; skipping the router and its middleware stack there is
    measurable under load (bench/overhead.py). Every request gets its `RequestContext`
    here, in the scope, where later layers (auth, metrics) read it, and passes the
    telemetry's edge (request id, summary log, metrics, span).
    """

    def __init__(self, routes: Starlette, hot: _HotRoutes, telemetry: Telemetry) -> None:
        self.routes = routes
        self.telemetry = telemetry
        self._hot = hot

    @property
    def state(self) -> Any:
        return self.routes.state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self.telemetry.serve(scope, receive, send, self._dispatch)
            return
        await self.routes(scope, receive, send)  # type: ignore[arg-type]

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            context = context_of(scope)
            keys = self._hot.keys
            if keys is not None and scope["path"] not in _OPEN_PATHS and not _admin(scope["path"]):
                try:
                    context.principal = await keys.authenticate(context.headers)
                except ProxyError as exc:
                    # A wrong base URL is told as such: the key may be right, the path is not.
                    error = _misrouted(scope) or exc
                    headers = {**error.headers, "x-request-id": context.request_id}
                    await send_json(send, error.status, _error_shape(scope["path"])(error), headers)
                    return
                context.headers = keys.upstream_headers(dict(context.headers))
            if scope["method"] == "POST":
                handler = self._hot.handlers.get(scope["path"])
                if handler is not None:
                    await handler(scope, receive, send)
                    return
                if self._hot.handlers is _NOT_READY and scope["path"] in _FRONT_PATHS:
                    error = ProxyError("the proxy is not ready", status=503, code="not_ready")
                    headers = {"x-request-id": context.request_id}
                    await send_json(send, error.status, _error_shape(scope["path"])(error), headers)
                    return
            elif scope["path"] in _POST_PATHS:
                error = MethodNotAllowedError.on(scope["method"], scope["path"], "POST")
                headers = {**error.headers, "x-request-id": context.request_id}
                await send_json(send, error.status, _error_shape(scope["path"])(error), headers)
                return
        await self.routes(scope, receive, send)  # type: ignore[arg-type]


Handler = Callable[[Scope, Receive, Send], Awaitable[None]]
_FRONT_PATHS = ("/v1/chat/completions", "/v1/responses", "/v1/messages")
_POST_PATHS = frozenset({*_FRONT_PATHS, "/v1/messages/count_tokens"})
"""The fronts' routes, dispatched here for POST; any other method is a 405."""


class MethodNotAllowedError(ProxyError):
    """A route asked with a method it does not take; `Allow` names those it does."""

    status = 405
    type = "invalid_request_error"
    code = "method_not_allowed"

    @classmethod
    def on(cls, method: str, path: str, allow: str) -> MethodNotAllowedError:
        message = f"{method} is not allowed on {path}; it takes {allow}"
        return cls(message, headers={"allow": allow})


def _error_shape(path: str) -> Callable[[ProxyError], dict[str, Any]]:
    """The error body shape of the front a path belongs to: Anthropic's on /v1/messages, and
    on a messages path whose `/v1` is missing or doubled (an Anthropic SDK's wrong base URL)."""
    if is_anthropic(path):
        return anthropic_error_body
    return ProxyError.body


class NotFoundError(ProxyError):
    """No route serves the path; the message says what was probably meant."""

    status = 404
    type = "invalid_request_error"
    code = "not_found"


def _misrouted(scope: Scope) -> NotFoundError | None:
    """The 404 for a path that is a route with `/v1` missing or doubled, else None."""
    request = Request(scope)
    root = str(request.base_url).rstrip("/")
    if misrouted(scope["path"], root) is None:
        return None
    return NotFoundError(not_found(scope["method"], scope["path"], root))


_OPEN_PATHS = frozenset({"/", "/healthz", "/metrics"})
"""Paths the edge lets through without a client key: the index, liveness probes, and the
metrics, which take operators' keys only and check them themselves."""


def _admin(path: str) -> bool:
    """The admin front's paths: it checks the admin or master key itself, and its panel
    page loads without one."""
    return path == "/admin" or path.startswith("/admin/")


_NOT_READY: dict[str, Handler] = {}


class _HotRoutes:
    """The fronts' handlers, which exist only while the lifespan runs."""

    def __init__(self) -> None:
        self.handlers: dict[str, Handler] = _NOT_READY
        self.keys: Authenticator | None = None
        self._records: ResponseRecords | None = None

    def bind(self, services: Services) -> None:
        self.keys = services.keys
        self.handlers = {
            "/v1/chat/completions": ChatCompletions(services),
            "/v1/responses": Responses(services),
            "/v1/messages": Messages(services),
            "/v1/messages/count_tokens": CountTokens(services),
        }
        self._records = ResponseRecords(services)

    def unbind(self) -> None:
        self.handlers = _NOT_READY
        self.keys = None
        self._records = None

    async def records(self, request: Request) -> Response:
        if self._records is None:
            raise ProxyError("the proxy is not ready", status=503, code="not_ready")
        return await self._records(request)


async def _models(request: Request) -> Response:
    """The models a request may name; a 502 when no upstream could list its models, which
    `toolwire.unlisted` names when only some could not."""
    services: Services = request.app.state.services
    listing = await services.upstreams.list_models()
    if listing.none_listed:
        raise UpstreamError("; ".join(f"cannot list models: {why}" for _, why in listing.unlisted))
    data = [
        {"id": model, "object": "model", "created": 0, "owned_by": owner}
        for model, owner in listing.models
    ]
    body: dict[str, Any] = {"object": "list", "data": data}
    if listing.unlisted:
        unlisted = [{"upstream": name, "error": why} for name, why in listing.unlisted]
        body["toolwire"] = {"unlisted": unlisted}
    return JSONResponse(body)


async def _healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def _readyz(request: Request) -> Response:
    """Ready once the sources are loaded; a 503 while starting, and while no upstream accepts
    a connection (nothing could be served). Each source's and upstream's status."""
    services: Services | None = getattr(request.app.state, "services", None)
    if services is None:
        return JSONResponse({"status": "starting"}, status_code=503)
    statuses = services.sources.statuses()
    upstreams = await services.upstreams.reachability()
    stranded = not any(u.reachable for u in upstreams)
    body = {
        "status": "upstreams unreachable" if stranded else "ready",
        "tools": len(services.registry),
        "sources": [
            {"name": s.name, "reachable": s.reachable, "tools": s.tool_count, "error": s.error}
            for s in statuses
        ],
        "upstreams": [
            {"name": u.name, "address": u.address, "reachable": u.reachable, "error": u.error}
            for u in upstreams
        ],
    }
    return JSONResponse(body, status_code=503 if stranded else 200)


async def _http_error(request: Request, exc: Exception) -> Response:
    """The router's own refusals (no such route, a method the route does not take) in the
    shape of the front the path belongs to."""
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
    return JSONResponse(_error_shape(path)(error), status_code=error.status, headers=headers)


async def _proxy_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ProxyError)
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)
