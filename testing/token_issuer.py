"""An OAuth authorization server for tests of `/mcp` as a protected resource: it signs JWT
access tokens with keys it generates (ES256, EdDSA, RS256), publishes them as a JWKS, answers
RFC 7662 introspection for opaque tokens, and issues tokens by the client-credentials grant
(with RFC 8707's `resource` as their audience) to clients that discover it.

Tests change its state: mint tokens with any claims, rotate keys, break the key set.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from testing.asgi_serving import serve_app

__all__ = ["CLIENTS", "INTROSPECTOR", "TokenIssuer", "serve_token_issuer"]

INTROSPECTOR = ("toolwire", "introspection-secret")
"""The client the proxy introspects as."""
CLIENTS = {"agent-1": "agent-1-secret", "agent-2": "agent-2-secret"}
"""Confidential clients of the client-credentials grant (id → secret); a token names its
client in `sub` and `client_id`."""
Breakage = Literal["500", "garbage", "hang"]


@dataclass
class _Key:
    alg: str
    private: Any
    public_jwk: dict[str, Any]


@dataclass
class TokenIssuer:
    """The authorization server's state."""

    issuer: str = ""
    resource: str = ""
    """The audience its tokens name unless told otherwise."""
    keys: dict[str, _Key] = field(default_factory=dict)
    published: list[str] = field(default_factory=list)
    """The kids its key set lists."""
    current: str = ""
    """The kid it signs with."""
    opaque: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Opaque tokens and their introspection answers."""
    key_set_broken: Breakage | None = None
    introspection_broken: Breakage | None = None
    key_set_fetches: int = 0
    introspections: int = 0
    released: asyncio.Event = field(default_factory=asyncio.Event)
    """Set at teardown: a hanging endpoint then answers."""

    def rotate(self, alg: str = "ES256", *, publish: bool = True) -> str:
        """A new signing key (published in the key set unless told not to); its kid."""
        kid = f"key-{len(self.keys) + 1}-{alg.lower()}"
        self.keys[kid] = _generated(alg)
        if publish:
            self.published.append(kid)
        self.current = kid
        return kid

    def claims(self, subject: str = "alice", **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.resource,
            "sub": subject,
            "iat": now,
            "exp": now + 600,
            "scope": "tools",
        }
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def mint(self, subject: str = "alice", *, kid: str | None = None, **claims: Any) -> str:
        """A JWT access token signed with `kid` (the current key by default); a claim given
        as None is left out."""
        kid = kid or self.current
        key = self.keys[kid]
        return jwt.encode(
            self.claims(subject, **claims), key.private, algorithm=key.alg, headers={"kid": kid}
        )

    def mint_opaque(self, subject: str = "alice", *, active: bool = True, **claims: Any) -> str:
        """An opaque token the introspection endpoint knows."""
        token = secrets.token_urlsafe(24)
        answer = {"active": active, "token_type": "Bearer", **self.claims(subject, **claims)}
        if "client_id" not in answer:
            answer["client_id"] = subject
        self.opaque[token] = answer
        return token

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            # Required by the SDK's metadata model, though this server only issues by the
            # client-credentials grant.
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks",
            "introspection_endpoint": f"{self.issuer}/introspect",
            "response_types_supported": ["code"],
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        }

    async def key_set(self, request: Request) -> Response:
        self.key_set_fetches += 1
        broken = await self._broken(self.key_set_broken)
        if broken is not None:
            return broken
        keys = [{**self.keys[kid].public_jwk, "kid": kid, "use": "sig"} for kid in self.published]
        return JSONResponse({"keys": keys})

    async def introspect(self, request: Request) -> Response:
        self.introspections += 1
        broken = await self._broken(self.introspection_broken)
        if broken is not None:
            return broken
        if _basic(request) != INTROSPECTOR:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        form = await request.form()
        answer = self.opaque.get(str(form.get("token", "")))
        return JSONResponse(answer if answer is not None else {"active": False})

    async def token(self, request: Request) -> Response:
        client = _basic(request)
        if client is None or CLIENTS.get(client[0]) != client[1]:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        form = await request.form()
        if form.get("grant_type") != "client_credentials":
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        resource = str(form.get("resource") or self.resource)
        scope = str(form.get("scope") or "tools")
        token = self.mint(client[0], aud=resource, scope=scope, client_id=client[0])
        return JSONResponse(
            {"access_token": token, "token_type": "Bearer", "expires_in": 600, "scope": scope}
        )

    async def _broken(self, breakage: Breakage | None) -> Response | None:
        if breakage == "500":
            return JSONResponse({"error": "down"}, status_code=500)
        if breakage == "garbage":
            return Response("<html>maintenance</html>", media_type="text/html")
        if breakage == "hang":
            await self.released.wait()
            return JSONResponse({"error": "late"}, status_code=500)
        return None


def _generated(alg: str) -> _Key:
    if alg == "ES256":
        private: Any = ec.generate_private_key(ec.SECP256R1())
        public = ECAlgorithm.to_jwk(private.public_key(), as_dict=True)
    elif alg == "EdDSA":
        private = ed25519.Ed25519PrivateKey.generate()
        public = OKPAlgorithm.to_jwk(private.public_key(), as_dict=True)
    elif alg == "RS256":
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = RSAAlgorithm.to_jwk(private.public_key(), as_dict=True)
    else:
        raise ValueError(f"no key generator for {alg}")
    return _Key(alg, private, {**public, "alg": alg})


def _basic(request: Request) -> tuple[str, str] | None:
    header = request.headers.get("authorization", "")
    if not header.startswith("Basic "):
        return None
    user, _, secret = base64.b64decode(header[6:]).decode().partition(":")
    return user, secret


@contextlib.asynccontextmanager
async def serve_token_issuer() -> AsyncIterator[TokenIssuer]:
    """Serve a token issuer on a loopback port, signing with one ES256 key."""
    issuer = TokenIssuer()
    issuer.rotate("ES256")
    app = Starlette(
        routes=[
            Route("/.well-known/oauth-authorization-server", lambda _: _metadata(issuer)),
            Route("/jwks", issuer.key_set),
            Route("/introspect", issuer.introspect, methods=["POST"]),
            Route("/token", issuer.token, methods=["POST"]),
        ]
    )
    async with serve_app(app, lifespan="off", timeout_graceful_shutdown=1) as root:
        issuer.issuer = root
        try:
            yield issuer
        finally:
            issuer.released.set()


def _metadata(issuer: TokenIssuer) -> Response:
    return JSONResponse(issuer.metadata())
