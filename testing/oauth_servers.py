"""An OAuth-protected MCP server for tests: a small authorization server (client credentials,
authorization code with PKCE, refresh tokens, revocation) and an MCP server that accepts only
its tokens, through the `mcp` SDK's resource-server support (a token verifier, protected
resource metadata, `WWW-Authenticate` on 401). Both are served on one loopback origin.

The authorization server consents at once: `GET /authorize` redirects to the client's
redirect URI with a code, so a test completes a login by following the URL.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from testing.asgi_serving import serve_app

__all__ = ["AuthorizationServer", "OAuthProtected", "serve_oauth_protected"]

CONFIDENTIAL = {"machine": "machine-secret", "other-machine": "other-secret"}
"""Clients registered in advance (client id → secret), for the client-credentials grant."""
PUBLIC_CLIENT = "toolwire"
"""A public client (no secret) for the authorization-code grant."""


@dataclass
class _Grant:
    client_id: str
    subject: str | None
    expires_at: float
    revoked: bool = False


@dataclass
class _Code:
    client_id: str
    redirect_uri: str
    challenge: str
    subject: str


@dataclass
class AuthorizationServer:
    """The authorization server's state, which tests change: revoke tokens, disable clients."""

    issuer: str = ""
    lifetime_s: int = 3600
    access: dict[str, _Grant] = field(default_factory=dict)
    refresh: dict[str, _Grant] = field(default_factory=dict)
    codes: dict[str, _Code] = field(default_factory=dict)
    disabled: set[str] = field(default_factory=set)
    issued: list[str] = field(default_factory=list)
    """Grant types of the tokens issued, in order (`client_credentials`, `refresh_token`, ...)."""
    subject: str = "alice"
    """Who consents to the next authorization request."""

    def revoke_all(self) -> None:
        """Every access token issued so far is refused from now on (refresh tokens stay)."""
        for grant in self.access.values():
            grant.revoked = True

    def revoke_refresh(self) -> None:
        for grant in self.refresh.values():
            grant.revoked = True

    def verify(self, token: str) -> AccessToken | None:
        grant = self.access.get(token)
        if grant is None or grant.revoked or grant.expires_at < time.time():
            return None
        return AccessToken(
            token=token,
            client_id=grant.client_id,
            scopes=["tools"],
            expires_at=int(grant.expires_at),
            subject=grant.subject,
        )

    def _issue(self, grant_type: str, client_id: str, subject: str | None) -> dict[str, Any]:
        self.issued.append(grant_type)
        token = secrets.token_urlsafe(16)
        expires_at = time.time() + self.lifetime_s
        self.access[token] = _Grant(client_id, subject, expires_at)
        body: dict[str, Any] = {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": self.lifetime_s,
            "scope": "tools",
        }
        if grant_type != "client_credentials":
            refresh = secrets.token_urlsafe(16)
            self.refresh[refresh] = _Grant(client_id, subject, expires_at + 86400)
            body["refresh_token"] = refresh
        return body

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "client_credentials", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
        }

    async def authorize(self, request: Request) -> Response:
        query = request.query_params
        if query.get("client_id") != PUBLIC_CLIENT or query.get("code_challenge_method") != "S256":
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        code = secrets.token_urlsafe(16)
        redirect_uri = query["redirect_uri"]
        self.codes[code] = _Code(PUBLIC_CLIENT, redirect_uri, query["code_challenge"], self.subject)
        answer = {"code": code, "state": query.get("state", ""), "iss": self.issuer}
        return RedirectResponse(f"{redirect_uri}?{urlencode(answer)}", status_code=302)

    async def token(self, request: Request) -> Response:
        form = await request.form()
        grant_type = str(form.get("grant_type", ""))
        client_id = self._client(request, form)
        if client_id is None or client_id in self.disabled:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        if grant_type == "client_credentials" and client_id in CONFIDENTIAL:
            return JSONResponse(self._issue(grant_type, client_id, None))
        if grant_type == "authorization_code":
            code = self.codes.pop(str(form.get("code", "")), None)
            verifier = str(form.get("code_verifier", ""))
            if (
                code is None
                or code.client_id != client_id
                or code.redirect_uri != form.get("redirect_uri")
                or _challenge(verifier) != code.challenge
            ):
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return JSONResponse(self._issue(grant_type, client_id, code.subject))
        if grant_type == "refresh_token":
            grant = self.refresh.get(str(form.get("refresh_token", "")))
            if grant is None or grant.revoked or grant.client_id != client_id:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return JSONResponse(self._issue(grant_type, client_id, grant.subject))
        return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)

    def _client(self, request: Request, form: Any) -> str | None:
        """The authenticated client: HTTP Basic for a confidential one, the id for a public one."""
        header = request.headers.get("authorization", "")
        if header.startswith("Basic "):
            client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
            return client_id if CONFIDENTIAL.get(client_id) == secret else None
        client_id = str(form.get("client_id", ""))
        return client_id if client_id == PUBLIC_CLIENT else None


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


class _Verifier:
    def __init__(self, server: AuthorizationServer) -> None:
        self._server = server

    async def verify_token(self, token: str) -> AccessToken | None:
        return self._server.verify(token)


class _Late:
    """An ASGI app set once the port (and so the issuer's URL) is known."""

    app: Any = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


@dataclass(frozen=True)
class OAuthProtected:
    url: str
    """The MCP endpoint."""
    issuer: str
    authority: AuthorizationServer


def _mcp_server(issuer: str, authority: AuthorizationServer) -> MCPServer:
    server = MCPServer(
        "toolwire-test-oauth",
        token_verifier=_Verifier(authority),
        auth=AuthSettings(
            issuer_url=issuer,  # type: ignore[arg-type]
            resource_server_url=f"{issuer}/mcp",  # type: ignore[arg-type]
            validate_token_resource=False,
        ),
    )

    @server.tool()
    def whoami() -> str:
        """The OAuth client (and user) the call's token was issued to."""
        token = get_access_token()
        if token is None:
            return "nobody"
        return token.client_id if token.subject is None else f"{token.client_id}/{token.subject}"

    return server


@contextlib.asynccontextmanager
async def serve_oauth_protected() -> AsyncIterator[OAuthProtected]:
    """Serve the authorization server and the protected MCP server on one loopback port."""
    late = _Late()
    authority = AuthorizationServer()
    async with serve_app(late, lifespan="off", timeout_graceful_shutdown=1) as root:
        authority.issuer = root
        server = _mcp_server(root, authority)
        app = server.streamable_http_app()
        app.router.routes[0:0] = [
            Route(
                "/.well-known/oauth-authorization-server",
                lambda _: JSONResponse(authority.metadata()),
            ),
            Route("/authorize", authority.authorize),
            Route("/token", authority.token, methods=["POST"]),
        ]
        late.app = app
        # The session manager's task group is entered and left by one task of its own (a
        # module-scoped fixture is set up and torn down by different tasks).
        running, stop = asyncio.Event(), asyncio.Event()

        async def manage() -> None:
            async with server.session_manager.run():
                running.set()
                await stop.wait()

        task = asyncio.create_task(manage())
        try:
            async with asyncio.timeout(10):
                await running.wait()
            yield OAuthProtected(f"{root}/mcp", root, authority)
        finally:
            stop.set()
            await task
