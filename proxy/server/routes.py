"""The route table: every path the proxy serves, what serves it, and how the edge treats it.

Each layer of the edge reads the request's row from its `RequestContext` (`route_of`, once
per request): the telemetry its label, the drain what it answers while draining, auth
whether it is open, the router what serves it; every refusal on the way takes the row's
error shape. A path no row serves is told what it was probably meant as (an SDK's base URL
with `/v1` missing or doubled), in that SDK's shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request

from ..fronts import (
    ChatCompletions,
    CountTokens,
    Messages,
    Responses,
    anthropic_error_body,
    chat_error_body,
    responses_error_body,
)
from . import endpoints
from .asgi import Scope
from .bearer_tokens import protected_resource
from .routing import ANY, UNROUTED, NotFoundError, Route

if TYPE_CHECKING:
    from ..config import Settings

POST = ("POST",)

CHAT = Route(
    "/v1/chat/completions",
    "chat",
    POST,
    front=ChatCompletions,
    shape=chat_error_body,
    turn=True,
    what="Chat Completions, with the tool loop",
)
RESPONSES = Route(
    "/v1/responses",
    "responses",
    POST,
    front=Responses,
    shape=responses_error_body,
    turn=True,
    what="the Responses API, with the tool loop",
)
MESSAGES = Route(
    "/v1/messages",
    "messages",
    POST,
    front=Messages,
    shape=anthropic_error_body,
    sdk="Anthropic",
    turn=True,
    what="the Anthropic Messages API, with the tool loop",
)
FRONTS = (CHAT, RESPONSES, MESSAGES)
"""The turn fronts: a POST to one runs a turn of the tool loop."""


def _metrics_on(settings: Settings) -> bool:
    return settings.telemetry.metrics


def _mcp_on(settings: Settings) -> bool:
    return settings.mcp_server.enabled


def _admin_on(settings: Settings) -> bool:
    return settings.admin.enabled


def _oauth_on(settings: Settings) -> bool:
    return settings.mcp_server.enabled and settings.mcp_server.oauth is not None


ADMIN_PANEL = "/admin/"
"""Where the admin panel loads, which the index names."""
MCP = Route(
    "/mcp",
    "mcp",
    ANY,
    when=_mcp_on,
    listed=(("POST, GET, DELETE", "/mcp", "the tools as an MCP server"),),
)
"""The tools as an MCP server (`McpFront`), which checks Host and Origin itself."""
OAUTH_METADATA = "/.well-known/oauth-protected-resource"
"""Where `/mcp`'s protected resource metadata is served (with `mcp_server.oauth`)."""
ADMIN = Route(
    "/admin",
    "admin",
    ANY,
    subtree=True,
    open=True,
    when=_admin_on,
    listed=(("*", "/admin/api/", "the admin API"), ("GET", ADMIN_PANEL, "the admin panel")),
)
"""The admin API and panel (`AdminFront`): it checks the admin or master key itself, and
its panel page loads without one."""

ROUTES: tuple[Route, ...] = (
    CHAT,
    RESPONSES,
    Route(
        "/v1/responses/{response_id}/cancel",
        "responses",
        POST,
        endpoint=endpoints.records,
        listed=(("POST", "/v1/responses/{id}/cancel", "cancel a background response"),),
    ),
    Route(
        "/v1/responses/{response_id}",
        "responses",
        ("GET", "DELETE"),
        endpoint=endpoints.records,
        listed=(("GET, DELETE", "/v1/responses/{id}", "a stored response"),),
    ),
    MESSAGES,
    Route(
        "/v1/messages/count_tokens",
        "messages",
        POST,
        front=CountTokens,
        shape=anthropic_error_body,
        sdk="Anthropic",
        what="token counting (Anthropic upstreams)",
    ),
    Route("/v1/models", "models", endpoint=endpoints.models, what="the models the upstreams serve"),
    Route(
        "/healthz",
        "healthz",
        endpoint=endpoints.healthz,
        open=True,
        quiet=True,
        draining="served",
        what="liveness",
    ),
    Route(
        "/readyz",
        "readyz",
        endpoint=endpoints.readyz,
        quiet=True,
        draining="reported",
        what="readiness: sources and upstreams",
    ),
    Route(
        "/metrics",
        "metrics",
        endpoint=endpoints.metrics,
        # Operators' keys only: the endpoint checks them itself.
        open=True,
        quiet=True,
        draining="served",
        what="Prometheus metrics (operators' keys)",
        when=_metrics_on,
    ),
    MCP,
    # RFC 9728's metadata of /mcp: at the path its clients try first, and at the root's.
    *(
        Route(
            path,
            "oauth_metadata",
            endpoint=protected_resource,
            open=True,
            draining="served",
            what="where /mcp's OAuth access tokens come from (RFC 9728)",
            when=_oauth_on,
        )
        for path in (OAUTH_METADATA + MCP.path, OAUTH_METADATA)
    ),
    ADMIN,
    # Counted with the paths no route serves.
    Route("/", "other", endpoint=endpoints.index, open=True),
)
"""Every route, in the order `GET /` lists them."""

_EXACT = {r.path: r for r in ROUTES if not r.subtree and "{" not in r.path}
_WIDE = tuple(r for r in ROUTES if r.path not in _EXACT)
_UNROUTED_ANTHROPIC = Route("", "other", ANY, shape=anthropic_error_body, sdk="Anthropic")
_MEANT = tuple(
    (route.path[3:].partition("{")[0].rstrip("/"), route.sdk)
    for route in ROUTES
    if route.path.startswith("/v1/")
)
"""What follows `/v1` in each client route, and the SDK that calls it."""


def route_of(path: str) -> Route:
    """The row that serves `path`; for a path none serves, one in the shape of the SDK it
    was probably meant for."""
    route = _EXACT.get(path)
    if route is not None:
        return route
    for route in _WIDE:
        if route.matches(path):
            return route
    anthropic = _sdk_of(_unprefixed(path)[0]) == "Anthropic"
    return _UNROUTED_ANTHROPIC if anthropic else UNROUTED


def enabled(route: Route, settings: Settings) -> bool:
    """Whether `GET /` lists `route` with these settings (and, for an app of its own,
    whether it is built)."""
    return route.when is None or route.when(settings)


def misrouted(path: str, root: str) -> str | None:
    """What a request for a path the proxy does not serve probably meant, or None.

    `root` is the proxy's URL as the client reached it (`http://127.0.0.1:8000`).
    """
    rest, prefixes = _unprefixed(path)
    sdk = _sdk_of(rest)
    if prefixes == 1 or sdk is None:
        return None
    meant = f"/v1{rest}"
    if sdk == "Anthropic":
        if prefixes == 0:
            return f"did you mean {meant}? The Anthropic SDK's base_url is {root} (no /v1)"
        return f"did you mean {meant}? The Anthropic SDK's base_url has no /v1: use {root}"
    if prefixes == 0:
        return f"did you mean {meant}? The OpenAI SDK's base_url ends in /v1: use {root}/v1"
    return f"did you mean {meant}? The OpenAI SDK's base_url has /v1 once: use {root}/v1"


def not_found(method: str, path: str, root: str) -> str:
    """The message of a 404 for a path no route serves: what was meant, or where to look."""
    hint = misrouted(path, root)
    return f"no route {method} {path}; " + (hint or f"GET {root}/ lists the routes")


def misrouted_error(scope: Scope) -> NotFoundError | None:
    """The 404 for a path that is a route with `/v1` missing or doubled, else None."""
    root = str(Request(scope).base_url).rstrip("/")
    if misrouted(scope["path"], root) is None:
        return None
    return NotFoundError(not_found(scope["method"], scope["path"], root))


def _unprefixed(path: str) -> tuple[str, int]:
    """`path` without its leading `/v1` segments, and how many there were."""
    count = 0
    while path == "/v1" or path.startswith("/v1/"):
        path = path[3:]
        count += 1
    return path, count


def _sdk_of(rest: str) -> str | None:
    """The SDK whose client route `rest` (a path without `/v1`) is, or is under."""
    for name, sdk in _MEANT:
        if rest == name or rest.startswith(name + "/"):
            return sdk
    return None
