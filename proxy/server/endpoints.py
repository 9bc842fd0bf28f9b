"""The proxy's own endpoints beside the fronts: the index, the models, stored responses,
liveness, readiness and the metrics. Each reads what it needs from the app's state."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..errors import ProxyError, UpstreamError
from ..fronts import ResponseRecords

if TYPE_CHECKING:
    from .routing import Route
    from .services import Services


class Index:
    """`GET /`: what this server is and how to reach it, as JSON (browsers show it too)."""

    def __init__(self, routes: Iterable[Route], *, panel: str | None) -> None:
        self._routes = [listing for route in routes for listing in route.listings]
        self._panel = panel
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
        if self._panel is not None:
            body["admin_panel"] = root + self._panel
        return JSONResponse(body)

    def _version_text(self) -> str:
        if self._version is None:
            try:
                self._version = metadata.version("toolwire")
            except metadata.PackageNotFoundError:  # run from a checkout without installing
                self._version = "unknown"
        return self._version


async def index(request: Request) -> Response:
    """`GET /`: the app's `Index`."""
    page: Index = request.app.state.index
    return await page.page(request)


async def models(request: Request) -> Response:
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


async def records(request: Request) -> Response:
    """`GET` and `DELETE` of a stored response (the Responses front's records)."""
    services: Services | None = getattr(request.app.state, "services", None)
    if services is None:
        raise ProxyError("the proxy is not ready", status=503, code="not_ready")
    return await ResponseRecords(services)(request)


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
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


async def metrics(request: Request) -> Response:
    """`GET /metrics`: the app's telemetry's exposition, for operators' keys."""
    return await request.app.state.telemetry.metrics_endpoint(request)  # type: ignore[no-any-return]
