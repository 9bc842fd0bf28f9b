"""create_app(settings): the ASGI application and the objects it owns for its lifetime."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from policies import MemoryApprovalStore, RulePolicy
from registry import Executor, SourceSet, ToolRegistry

from .approvals import ApprovalFlow
from .config import Settings
from .continuations import MemoryTurnStore
from .errors import ProxyError
from .injection import Catalog
from .loop import ToolLoop
from .responses import send_error
from .router import UpstreamRouter
from .routes import ChatCompletions, Services

log = logging.getLogger("toolwire")


def sources_for(settings: Settings) -> SourceSet:
    """The tool sources of a configuration, not yet started.

    Raises:
        SourceLoadError: an entry has no source implementation.
    """
    return SourceSet.from_configs(settings.tools, base_dir=settings.base_dir)


def create_app(
    settings: Settings,
    *,
    registry: ToolRegistry | None = None,
    sources: SourceSet | None = None,
) -> ToolwireApp:
    """The proxy as an ASGI app.

    Given `sources` are taken as started (their tools in `registry`); otherwise the app
    starts the configured sources in its lifespan and closes them at shutdown.
    """
    chat = _LateBound()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        tools = registry if registry is not None else ToolRegistry()
        owned = sources is None
        source_set = sources_for(settings) if sources is None else sources
        if owned:
            await source_set.start(tools)
        executor = Executor.from_config(settings.execution)
        policy = RulePolicy(settings.policy)
        turns = MemoryTurnStore()
        upstreams = UpstreamRouter(settings.upstreams)
        services = Services(
            registry=tools,
            sources=source_set,
            catalog=Catalog(tools, policy),
            loop=ToolLoop(
                executor=executor,
                policy=policy,
                limits=settings.loop,
                turns=turns,
                approvals=ApprovalFlow(
                    MemoryApprovalStore(),
                    # Outcomes outlive pending turns: a conversation replays them for days.
                    MemoryTurnStore(ttl_s=7 * 86400, max_entries=100_000),
                    ttl_s=settings.policy.approval_ttl_s,
                ),
                strict_arguments=settings.execution.strict_arguments,
            ),
            upstreams=upstreams,
            max_body_bytes=settings.server.max_body_bytes,
        )
        app.state.services = services
        chat.target = ChatCompletions(services)
        log.info("toolwire ready: %d tools", len(tools))
        try:
            yield
        finally:
            chat.target = None
            await upstreams.aclose()
            executor.close()
            if owned:
                await source_set.aclose()

    routes = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", _models, methods=["GET"]),
            Route("/healthz", _healthz, methods=["GET"]),
            Route("/readyz", _readyz, methods=["GET"]),
        ],
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error, ProxyError: _proxy_error},
    )
    return ToolwireApp(routes, chat)


class ToolwireApp:
    """The ASGI app: chat completions dispatched straight to its handler, the rest routed.

    The chat route is the hot path; skipping the router and its middleware stack there is
    measurable under load (bench/overhead.py).
    """

    def __init__(self, routes: Starlette, chat: _LateBound) -> None:
        self.routes = routes
        self._chat = chat

    @property
    def state(self) -> Any:
        return self.routes.state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == "/v1/chat/completions"
        ):
            try:
                await self._chat(scope, receive, send)
            except ProxyError as exc:
                await send_error(send, exc)
            return
        await self.routes(scope, receive, send)


class _LateBound:
    """An ASGI app whose target exists only while the lifespan runs."""

    def __init__(self) -> None:
        self.target: ChatCompletions | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.target is None:
            raise ProxyError("the proxy is not ready", status=503, code="not_ready")
        await self.target(scope, receive, send)


async def _models(request: Request) -> Response:
    services: Services = request.app.state.services
    models = await services.upstreams.list_models()
    data = [
        {"id": model, "object": "model", "created": 0, "owned_by": owner} for model, owner in models
    ]
    return JSONResponse({"object": "list", "data": data})


async def _healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def _readyz(request: Request) -> Response:
    services: Services | None = getattr(request.app.state, "services", None)
    if services is None:
        return JSONResponse({"status": "starting"}, status_code=503)
    statuses = services.sources.statuses()
    body = {
        "status": "ready",
        "tools": len(services.registry),
        "sources": [
            {"name": s.name, "reachable": s.reachable, "tools": s.tool_count, "error": s.error}
            for s in statuses
        ],
    }
    return JSONResponse(body)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    kind = "not_found" if exc.status_code == 404 else "invalid_request_error"
    body = {"error": {"message": str(exc.detail), "type": kind, "param": None, "code": None}}
    return JSONResponse(body, status_code=exc.status_code)


async def _proxy_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ProxyError)
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)
