"""create_app(settings): the ASGI application and the objects it owns for its lifetime."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException

from policies import Gate, Guards, RulePolicy
from registry import Executor, SourceSet, ToolRegistry, use_token_store

from ..approvals.flow import ApprovalFlow
from ..approvals.webhook import WebhookApprover
from ..config import Settings
from ..errors import ProxyError
from ..fronts.responses.background import BackgroundRuns, Work
from ..state import build_stores
from ..state.runs import run_store
from ..telemetry import Telemetry
from ..telemetry.tool_calls import ToolCallListener
from ..turn.catalog import Catalog
from ..turn.loop import ToolLoop
from ..turn.programs import Programs
from ..turn.questions import Questions
from ..turn.sampling import UpstreamSampler
from ..turn.spill import Spills
from ..upstreams.router import UpstreamRouter
from .auth import Authenticator
from .bearer_tokens import BearerTokens
from .dispatch import Router, Running, http_error, proxy_error, starlette_routes
from .endpoints import Index
from .hosts import AllowedHosts
from .middleware import Edge
from .pins import PinKeeper
from .routes import ADMIN, ADMIN_PANEL, MCP, OAUTH_METADATA, ROUTES, enabled
from .routing import App, Route
from .services import Services
from .sources import hosted_problems, sources_for

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
    hosts = AllowedHosts(settings.server.allowed_hosts, bound=settings.server.host)
    mcp = _mcp_front(settings, hosts)
    admin = _admin_front(settings, hosts)
    telemetry = telemetry if telemetry is not None else Telemetry.from_settings(settings)
    running = Running()
    lifespan = _lifespan(settings, registry, sources, telemetry, running, mcp, admin)
    apps: dict[Route, App] = {}
    if mcp is not None:
        apps[MCP] = mcp
    if admin is not None:
        apps[ADMIN] = admin.app
    routes = Starlette(
        routes=starlette_routes(apps),
        lifespan=lifespan,
        exception_handlers={HTTPException: http_error, ProxyError: proxy_error},
    )
    served = [route for route in ROUTES if enabled(route, settings)]
    routes.state.index = Index(served, panel=ADMIN_PANEL if admin is not None else None)
    routes.state.telemetry = telemetry
    # The edge, one callable: the context, the drain, the telemetry, the key check, the router.
    return ToolwireApp(Router(routes, running), running, routes, telemetry)  # type: ignore[arg-type]


def _lifespan(
    settings: Settings,
    registry: ToolRegistry | None,
    sources: SourceSet | None,
    telemetry: Telemetry,
    running: Running,
    mcp: McpFront | None,
    admin: AdminFront | None,
) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]:
    """Starts the services (sources, stores, upstreams, the `/mcp` and admin fronts) when
    the app starts, and closes them in reverse order when it stops."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(telemetry.close)
            started = await _start(
                settings, registry, sources, stack, telemetry.listener, telemetry.drain
            )
            services = telemetry.instrument(started)
            app.state.services = services
            running.bind(services)
            stack.callback(running.unbind)
            if mcp is not None:
                serving = mcp.serving(
                    services,
                    approval_timeout_s=settings.policy.approval_ttl_s,
                    max_body_bytes=settings.server.max_body_bytes,
                    config=settings.mcp_server,
                )
                await stack.enter_async_context(serving)
            if admin is not None:
                await stack.enter_async_context(admin.serving(services))
            for problem in hosted_problems(settings.hosted_tools, services.registry):
                log.error("%s: requests declaring it are refused", problem)
            log.info("toolwire ready: %d tools", len(services.registry))
            yield

    return lifespan


def _mcp_front(settings: Settings, hosts: AllowedHosts) -> McpFront | None:
    """`/mcp`, when enabled; the MCP SDK's server is imported only then."""
    if not enabled(MCP, settings):
        return None
    from ..fronts.mcp import McpFront

    return McpFront(hosts)


def _admin_front(settings: Settings, hosts: AllowedHosts) -> AdminFront | None:
    """The admin front, when enabled; FastAPI is imported only then."""
    if not enabled(ADMIN, settings):
        return None
    from ..admin import AdminFront

    return AdminFront(settings.admin, settings.auth, hosts)


async def _start(
    settings: Settings,
    registry: ToolRegistry | None,
    sources: SourceSet | None,
    stack: contextlib.AsyncExitStack,
    listener: ToolCallListener,
    drain: Work | None = None,
) -> Services:
    """Build every long-lived object; `stack` closes each, also when a later one fails."""
    tools = registry if registry is not None else ToolRegistry()
    stores = await build_stores(settings)
    stack.push_async_callback(stores.aclose)
    use_token_store(stores.tokens)  # before the sources start: their OAuth grants
    # Before the sources start: every tool they register is checked against its pin.
    pins = await stack.enter_async_context(PinKeeper(tools, stores.pins).keeping())
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
    runs = run_store(stores.responses, stores.redis, settings.state)
    stack.push_async_callback(runs.aclose)
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
    programs = Programs(settings.code_mode, gate, observe=listener.program)
    stack.push_async_callback(programs.aclose)
    questions = Questions(
        turns=stores.turns,
        relay=stores.relay,
        records=stores.outcomes,
        timeout_s=settings.elicitation.timeout_s,
        taken_within_s=settings.elicitation.taken_within_s,
        sampler=UpstreamSampler(upstreams, timeout_s=settings.elicitation.sampling_timeout_s),
        observe=listener.mcp_request,
    )
    await stack.enter_async_context(questions.holding())
    loop = ToolLoop(
        gate=gate,
        limits=settings.loop,
        turns=stores.turns,
        approvals=approvals,
        strict_arguments=settings.execution.strict_arguments,
        programs=programs,
        spills=Spills(settings.results, stores.spills),
        questions=questions,
    )
    # Closed first: its runs end (failed) while the stores and upstreams are still open.
    background = BackgroundRuns(runs, stores.responses, settings.background, work=drain)
    await stack.enter_async_context(background)
    keys = None
    if settings.auth is not None:
        oauth = settings.mcp_server.oauth if settings.mcp_server.enabled else None
        tokens = BearerTokens(oauth, OAUTH_METADATA) if oauth is not None else None
        keys = Authenticator(settings.auth, limiter, tokens)
        stack.push_async_callback(keys.aclose)
    return Services(
        registry=tools,
        sources=sources,
        catalog=Catalog(tools, gate),
        loop=loop,
        upstreams=upstreams,
        responses=stores.responses,
        server=settings.server,
        gate=gate,
        keys=keys,
        approvals=approvals,
        keepalive_s=settings.loop.keepalive_s,
        mcp_tasks=stores.mcp_tasks,
        background=background,
        hosted_tools=settings.hosted_tools,
        pins=pins,
        questions=questions,
    )


class ToolwireApp(Edge):
    """The ASGI app: the edge around the router (`Edge`), with the state and telemetry the
    process reaches for (the services, the drain)."""

    def __init__(
        self, router: Router, running: Running, routes: Starlette, telemetry: Telemetry
    ) -> None:
        super().__init__(router, running, telemetry)
        self.routes = routes
        self.telemetry = telemetry

    @property
    def state(self) -> Any:
        return self.routes.state
