"""The admin API's OAuth logins to MCP sources (the README's **MCP sources behind OAuth**): an
operator starts one (`POST /admin/api/sources/{name}/login`, `toolwire admin login NAME`),
opens the authorization URL, consents; the authorization server sends the browser back to
`/admin/oauth/callback`, which keeps the tokens and reconnects the source.

The callback takes no admin key (the browser arriving from the authorization server has
none): the login's `state`, unguessable and good for one completion within ten minutes, is
what it is checked against, and the PKCE verifier never leaves the proxy.
"""

from __future__ import annotations

import html
import logging
from typing import Literal
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.exceptions import HTTPException

from .api import Caller, Runtime, caller_of
from .routes import ERRORS, AdminRoute

__all__ = ["callback_router", "router"]

log = logging.getLogger("toolwire.admin")

CALLBACK_PATH = "/oauth/callback"

router = APIRouter(
    prefix="/api", dependencies=[Depends(caller_of)], route_class=AdminRoute, responses=ERRORS
)
callback_router = APIRouter(route_class=AdminRoute)


class LoginStarted(BaseModel):
    """A login begun: the operator opens `authorization_url`; `state` follows it."""

    source: str
    authorization_url: str
    state: str
    redirect_uri: str
    """Toolwire's callback the authorization server sends the operator back to (register
    it with the authorization server as the client's redirect URI)."""
    for_key: str | None = None
    """The client key the login is made for (a source acting for its callers), or None."""


class LoginState(BaseModel):
    """How a login stands."""

    source: str
    status: Literal["pending", "done", "failed"]
    error: str | None
    expires_at: float
    for_key: str | None = None


class LoginRequest(BaseModel):
    """How to begin a login (every field optional)."""

    model_config = ConfigDict(extra="forbid")

    redirect_uri: str | None = Field(default=None, max_length=2000)
    """Toolwire's callback as the authorization server must name it, when the proxy is
    reached under another address (behind a TLS-terminating reverse proxy, say): an
    http(s) URL ending in `/admin/oauth/callback`. Default: the address this request
    reached."""
    for_key: str | None = Field(default=None, min_length=1, max_length=200)
    """Log in for this client key (by its name), for a source acting for its callers with
    `caller_credentials: {from: login}`: its calls present this login's tokens."""

    @field_validator("redirect_uri")
    @classmethod
    def _a_callback(cls, value: str | None) -> str | None:
        parts = urlsplit(value) if value is not None else None
        if parts is not None and (
            parts.scheme not in ("http", "https")
            or not parts.netloc
            or not parts.path.endswith(CALLBACK_PATH)
            or parts.query
        ):
            raise ValueError(f"must be an http(s) URL ending in /admin{CALLBACK_PATH}")
        return value


@router.post("/sources/{name:path}/login")
async def start_login(
    name: str,
    request: Request,
    caller: Caller,
    runtime: Runtime,
    body: LoginRequest | None = None,
) -> LoginStarted:
    """Begin an operator's login to an MCP source with the `authorization_code` grant."""
    redirect_uri = body.redirect_uri if body is not None else None
    for_key = body.for_key if body is not None else None
    if for_key is not None and not runtime.auth.has_key(for_key):
        raise HTTPException(404, f"no client key named {for_key!r}")
    if redirect_uri is None:
        # The admin's own root (`/admin`, where it is mounted) on the host the operator reached.
        root = request.url.path.rpartition("/api/sources/")[0]
        redirect_uri = str(request.url.replace(path=root + CALLBACK_PATH, query=None))
    from registry import LoginError, begin_login  # the MCP SDK: loaded on a login's demand

    try:
        url, state = await begin_login(name, redirect_uri, for_key=for_key)
    except LoginError as exc:
        raise HTTPException(404 if "no MCP source" in str(exc) else 502, str(exc)) from exc
    whom = "" if for_key is None else f" for the key {for_key}"
    log.info("admin: %s began an OAuth login to %s%s", caller, name, whom)
    return LoginStarted(
        source=name,
        authorization_url=url,
        state=state,
        redirect_uri=redirect_uri,
        for_key=for_key,
    )


@router.get("/logins/{state}")
async def get_login(state: str) -> LoginState:
    """A login's progress: `done` once the tokens are kept; `failed` with the reason."""
    from registry import login_status

    status = await login_status(state)
    if status is None:
        raise HTTPException(404, "unknown or expired login")
    return LoginState(
        source=status.source,
        status=status.status,
        error=status.error,
        expires_at=status.expires_at,
        for_key=status.for_key,
    )


@callback_router.get(CALLBACK_PATH, include_in_schema=False)
async def oauth_callback(
    request: Request,
    runtime: Runtime,
    state: str = "",
    code: str | None = None,
    iss: str | None = None,
    error: str | None = None,
) -> HTMLResponse:
    """Where the authorization server sends the operator back: the code becomes tokens."""
    from registry import LoginError, finish_login

    try:
        status = await finish_login(state, code, iss, error)
    except LoginError as exc:
        return _page(400, "Login not completed", str(exc))
    if status.status == "failed":
        log.warning("OAuth login to %s failed: %s", status.source, status.error)
        return _page(400, f"Login to {status.source} failed", status.error or "")
    if status.for_key is not None:  # the key's connections read it when they next connect
        log.info("OAuth login to %s for the key %s completed", status.source, status.for_key)
        title = f"Logged in to {status.source} for the key {status.for_key}"
        return _page(200, title, "Its calls use this login. You may close this window.")
    log.info("OAuth login to %s completed", status.source)
    services = runtime.services
    reloaded = await services.sources.reload(status.source, services.registry)
    update = {"name": reloaded.name, "reachable": reloaded.reachable, "tools": reloaded.tool_count}
    runtime.hub.publish("source", {**update, "error": reloaded.error, "by": "oauth login"})
    note = "It is connected." if reloaded.reachable else f"It is not connected: {reloaded.error}"
    return _page(200, f"Logged in to {status.source}", f"{note} You may close this window.")


def _page(status: int, title: str, text: str) -> HTMLResponse:
    body = (
        f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>"
    )
    return HTMLResponse(body, status_code=status, headers={"cache-control": "no-store"})
