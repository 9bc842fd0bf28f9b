"""The routes a client may call: the index at `GET /`, and what a path that is none of them
probably meant (an SDK's `base_url` with `/v1` missing or doubled)."""

from __future__ import annotations

from importlib import metadata

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..config import Settings

_OPENAI = ("/chat/completions", "/responses", "/models")
_ANTHROPIC = ("/messages",)
_ROUTES = (
    ("POST", "/v1/chat/completions", "Chat Completions, with the tool loop"),
    ("POST", "/v1/responses", "the Responses API, with the tool loop"),
    ("GET, DELETE", "/v1/responses/{id}", "a stored response"),
    ("POST", "/v1/messages", "the Anthropic Messages API, with the tool loop"),
    ("POST", "/v1/messages/count_tokens", "token counting (Anthropic upstreams)"),
    ("GET", "/v1/models", "the models the upstreams serve"),
    ("GET", "/healthz", "liveness"),
    ("GET", "/readyz", "readiness: sources and upstreams"),
)


def _unprefixed(path: str) -> tuple[str, int]:
    """`path` without its leading `/v1` segments, and how many there were."""
    count = 0
    while path == "/v1" or path.startswith("/v1/"):
        path = path[3:]
        count += 1
    return path, count


def _of(rest: str, names: tuple[str, ...]) -> bool:
    return any(rest == name or rest.startswith(name + "/") for name in names)


def is_anthropic(path: str) -> bool:
    """Whether `path` is (or was meant as) an Anthropic Messages route, whose errors take
    Anthropic's shape: `/v1/messages...`, also with `/v1` missing or doubled."""
    return _of(_unprefixed(path)[0], _ANTHROPIC)


def misrouted(path: str, root: str) -> str | None:
    """What a request for a path the proxy does not serve probably meant, or None.

    `root` is the proxy's URL as the client reached it (`http://127.0.0.1:8000`).
    """
    rest, prefixes = _unprefixed(path)
    if prefixes == 1:
        return None
    meant = f"/v1{rest}"
    if _of(rest, _ANTHROPIC):
        if prefixes == 0:
            return f"did you mean {meant}? The Anthropic SDK's base_url is {root} (no /v1)"
        return f"did you mean {meant}? The Anthropic SDK's base_url has no /v1: use {root}"
    if _of(rest, _OPENAI):
        if prefixes == 0:
            return f"did you mean {meant}? The OpenAI SDK's base_url ends in /v1: use {root}/v1"
        return f"did you mean {meant}? The OpenAI SDK's base_url has /v1 once: use {root}/v1"
    return None


def not_found(method: str, path: str, root: str) -> str:
    """The message of a 404 for a path no route serves: what was meant, or where to look."""
    hint = misrouted(path, root)
    return f"no route {method} {path}; " + (hint or f"GET {root}/ lists the routes")


class Index:
    """`GET /`: what this server is and how to reach it, as JSON (browsers show it too)."""

    def __init__(self, settings: Settings) -> None:
        self._routes = list(_ROUTES)
        if settings.telemetry.metrics:
            self._routes.append(("GET", "/metrics", "Prometheus metrics (operators' keys)"))
        if settings.mcp_server.enabled:
            self._routes.append(("POST, GET, DELETE", "/mcp", "the tools as an MCP server"))
        self._admin = settings.admin.enabled
        if self._admin:
            self._routes.append(("*", "/admin/api/", "the admin API"))
            self._routes.append(("GET", "/admin/", "the admin panel"))
        self._version: str | None = None

    async def page(self, request: Request) -> Response:
        root = str(request.base_url).rstrip("/")
        body = {
            "name": "Toolwire",
            "version": self._version_text(),
            "what": "an OpenAI-compatible proxy that runs server-side tools for the model",
            "openai_base_url": f"{root}/v1",
            "anthropic_base_url": root,
            "routes": [{"methods": m, "path": p, "what": w} for m, p, w in self._routes],
        }
        if self._admin:
            body["admin_panel"] = f"{root}/admin/"
        return JSONResponse(body)

    def _version_text(self) -> str:
        if self._version is None:
            try:
                self._version = metadata.version("toolwire")
            except metadata.PackageNotFoundError:  # run from a checkout without installing
                self._version = "unknown"
        return self._version
