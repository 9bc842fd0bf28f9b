"""The admin front: the REST API and the panel, mounted at `/admin`."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from policies import AuthConfig, KeyRing, Principal
from registry import RegistryError, SourceNotFoundError, ToolNotFoundError

from ..approvals.queue import ApprovalNotPendingError
from ..config import AdminConfig
from ..errors import ProxyError
from ..server.hosts import AllowedHosts
from ..server.services import Services
from .api import router
from .auth import AdminAuth
from .browsers import BrowserGuard
from .hub import CallFeed, EventHub
from .logins import callback_router as oauth_callback_router
from .logins import router as logins_router
from .pins import router as pins_router
from .routes import error_response, invalid
from .runtime import AdminRuntime
from .tools import ToolDesk

log = logging.getLogger("toolwire.admin")
STATIC = Path(__file__).parent / "static"


class AdminFront:
    """The app for `/admin` (`app`): the API under `api/`, the panel at `/`, both answering
    only requests that name this server (`hosts`) and taking changes as JSON.

    Its objects exist while `serving` runs (in the proxy's lifespan).
    """

    def __init__(self, config: AdminConfig, auth: AuthConfig | None, hosts: AllowedHosts) -> None:
        self._config = config
        self._auth = auth
        self._api = _build_app()
        self.app = BrowserGuard(self._api, hosts)

    @contextlib.asynccontextmanager
    async def serving(self, services: Services) -> AsyncIterator[None]:
        """Bind the API to the running proxy; live updates flow until the block ends.

        Raises:
            ValueError: the services carry no approval flow.
        """
        if services.approvals is None:
            raise ValueError("the admin API needs the services' approval flow")
        hub = EventHub()
        keys = services.keys.keys if services.keys is not None else None
        has_master = self._auth is not None and self._auth.master_key is not None
        if not self._config.key and not has_master:
            log.warning("admin API without a key: open to clients on this machine only")
        runtime = AdminRuntime(
            services=services,
            auth=AdminAuth(self._config.key, keys, has_master=has_master),
            desk=ToolDesk(services.registry, services.gate, _callers(self._auth, keys), hub),
            hub=hub,
            queue=services.approvals.queue,
        )
        stop_registry = services.registry.on_change(hub.registry_changed)
        stop_calls = services.gate.watch(CallFeed(hub))
        self._api.state.admin = runtime
        try:
            yield
        finally:
            self._api.state.admin = None
            stop_calls()
            stop_registry()
            hub.close()


def _callers(auth: AuthConfig | None, keys: KeyRing | None) -> list[tuple[str, Principal | None]]:
    """Each configured key by name, with its principal; `anonymous` without auth."""
    if auth is None or keys is None:
        return [("anonymous", None)]
    names = (["master"] if auth.master_key else []) + [k.name for k in auth.keys]
    return [(name, keys.principal(name)) for name in names]


def _build_app() -> FastAPI:
    app = FastAPI(
        title="Toolwire admin",
        summary="See and steer the tools a Toolwire proxy serves.",
        openapi_url="/api/openapi.json",
        docs_url=None,
        redoc_url=None,
    )
    app.state.admin = None
    app.include_router(router)
    app.include_router(pins_router)
    app.include_router(logins_router)
    app.include_router(oauth_callback_router)
    # Every refusal in one shape, OpenAI's, as on the proxy's own routes.
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(ToolNotFoundError, _not_found)
    app.add_exception_handler(SourceNotFoundError, _not_found)
    app.add_exception_handler(ApprovalNotPendingError, _not_found)
    app.add_exception_handler(RegistryError, _unprocessable)
    # The proxy's own errors keep their status: shared state lost (Redis) is a 503.
    app.add_exception_handler(ProxyError, _proxy_error)
    app.add_api_route("/", _panel, include_in_schema=False)
    app.mount("/assets", StaticFiles(directory=STATIC), name="assets")
    return app


async def _panel(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers={"cache-control": "no-cache"})


async def _http_error(request: Request, exc: Exception) -> Response:
    """FastAPI's and Starlette's refusals (a key missing, no such route, a body too large)."""
    assert isinstance(exc, HTTPException)
    return error_response(exc.status_code, str(exc.detail), headers=dict(exc.headers or {}))


async def _invalid(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return invalid(exc)


async def _not_found(request: Request, exc: Exception) -> Response:
    return error_response(404, str(exc))


async def _unprocessable(request: Request, exc: Exception) -> Response:
    return error_response(422, str(exc))


async def _proxy_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ProxyError)
    return error_response(
        exc.status, exc.message, param=exc.param, code=exc.code, headers=exc.headers
    )
