"""OAuth access tokens on `/mcp` (`mcp_server.oauth`): each is checked against the trusted
issuer, a JWT offline against its key set, an opaque token by introspection (RFC 7662), and
then speaks for a caller: a configured key, or a caller of its own with the configured scope.

Refusals carry the `WWW-Authenticate` challenge MCP clients discover the issuer from
(RFC 6750 §3, RFC 9728 §5.1): 401 with `error="invalid_token"`, 403 `insufficient_scope`.
The issuer's failures (its key set unreachable, its introspection down) are a 503, never a
hang: every call to it has a timeout.

A checked token is kept, by its SHA-256 digest (never the token itself), with its grant: a
JWT until its `exp` (plus the leeway) or until the key that signed it leaves the key set, an
introspection answer for `cache_s`; a session sending its token on every request pays the
signature check or the issuer's answer once. Requests with the same new opaque token wait
on one introspection.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote_plus, urlsplit

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from policies import KeyRing, Principal

from ..errors import ProxyError
from .oauth_config import TOKEN_PRINCIPAL_PREFIX, OAuthResourceConfig
from .signing_keys import SigningKeys
from .token_errors import (
    CallerRefusedError,
    IssuerUnavailableError,
    ScopeMissingError,
    TokenRefusedError,
)

if TYPE_CHECKING:  # PyJWT (and cryptography's backends, ~9 MB) load only with mcp_server.oauth
    import aiohttp  # and aiohttp: the issuer's client
    import jwt

log = logging.getLogger("toolwire.auth")

MAX_CALLER_CHARS = 200
"""A caller named by a claim longer than this is refused (the name keys rate windows)."""
MAX_TOKEN_CHARS = 16_384
"""Longer bearer values are refused unread (nor sent to the introspection endpoint)."""
_RETRY_S = "5"
VERIFIED_JWTS = 10_000
"""How many verified JWTs are kept (each a digest and its claims); the least recently used
go first."""


@dataclass(frozen=True, slots=True)
class Grant:
    """What a checked token grants: its claims and scopes."""

    claims: Mapping[str, Any]
    scopes: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Verified:
    """A verified JWT's grant, good until `until` while `key` is still the one held for
    `kid`."""

    until: float
    grant: Grant
    kid: str | None
    key: jwt.PyJWK


class BearerTokens:
    """Checks access tokens of the configured issuer and names the caller each speaks for."""

    def __init__(
        self,
        config: OAuthResourceConfig,
        metadata_path: str,
        *,
        verified_max: int = VERIFIED_JWTS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`metadata_path`: where the route table serves the metadata; its URL is that path
        with the resource's path appended, on the resource's origin (RFC 9728 §3.1).
        `verified_max`: how many verified JWTs are kept; `clock`: the time their `exp` and
        the introspection answers' are compared with."""
        self.config = config
        resource = urlsplit(config.resource)
        origin = f"{resource.scheme}://{resource.netloc}"
        self.metadata_url = origin + metadata_path + resource.path.rstrip("/")
        import aiohttp

        self._session: aiohttp.ClientSession | None = None
        self._timeout = aiohttp.ClientTimeout(total=config.timeout_s)
        self._issuers = _with_and_without_slash(config.issuer)
        self._audiences = _with_and_without_slash(config.resource)
        self._required = frozenset(config.scopes_required)
        self._scope_text = " ".join(config.scopes_required)
        self._signing_keys = SigningKeys(config, self._get) if config.jwks_url else None
        introspection = config.introspection
        self._answers: OrderedDict[bytes, tuple[float, Grant]] = OrderedDict()
        self._answers_max = introspection.cache_size if introspection else 0
        self._asking: dict[bytes, asyncio.Task[Grant]] = {}
        """Introspections under way, by the token's digest: one per token at a time."""
        self._verified: OrderedDict[bytes, _Verified] = OrderedDict()
        self._verified_max = verified_max
        self._key_sets_seen = 0
        self._clock = clock
        self._own_caller = functools.lru_cache(maxsize=verified_max)(self._own)
        """A caller of its own by its claim's value, made once (it is the same each time)."""

    async def principal(self, token: str, keys: KeyRing) -> Principal:
        """The caller `token` speaks for: one of `keys`, or a caller of its own.

        Raises:
            TokenRefusedError: not a valid token of the issuer for this resource (401).
            ScopeMissingError: valid, but a required scope is missing (403).
            CallerRefusedError: valid, for a caller no configuration admits (403).
            IssuerUnavailableError: the issuer could not be asked (503).
        """
        try:
            grant = await self._grant(token)
        except TokenRefusedError as exc:
            exc.headers = {"www-authenticate": self.challenge("invalid_token", exc.message)}
            raise
        missing = self._required - grant.scopes
        if missing:
            lacked = " ".join(sorted(missing))
            raise ScopeMissingError(
                f"the access token lacks the scope(s) {lacked} that /mcp requires",
                headers={"www-authenticate": self.challenge("insufficient_scope")},
            )
        return self._caller(grant.claims, keys)

    def challenge(self, error: str | None = None, detail: str = "") -> str:
        """The `WWW-Authenticate` value of a refusal: the error when a token was presented,
        the scopes a token needs (all of them, as a client asks anew for them) and where
        the metadata is."""
        parts = []
        if error is not None:
            parts.append(f'error="{error}"')
        if detail:
            parts.append(f'error_description="{_quotable(detail)}"')
        if self._scope_text:
            parts.append(f'scope="{self._scope_text}"')
        parts.append(f'resource_metadata="{self.metadata_url}"')
        return "Bearer " + ", ".join(parts)

    def metadata(self) -> dict[str, Any]:
        """The protected resource's metadata (RFC 9728 §2)."""
        config = self.config
        supported = config.scopes_supported
        return {
            "resource": config.resource,
            "authorization_servers": [config.issuer],
            "scopes_supported": supported if supported is not None else config.scopes_required,
            "bearer_methods_supported": ["header"],
            "resource_name": "Toolwire",
        }

    async def aclose(self) -> None:
        for asking in list(self._asking.values()):
            asking.cancel()
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _grant(self, token: str) -> Grant:
        if len(token) > MAX_TOKEN_CHARS:
            raise TokenRefusedError(f"the access token is longer than {MAX_TOKEN_CHARS} characters")
        keys = self._signing_keys
        if keys is None:
            return await self._introspected(token)
        digest = hashlib.sha256(token.encode()).digest()
        kept = self._verified.get(digest)
        if kept is not None:
            if kept.until > self._clock() and keys.held(kept.kid) is kept.key:
                self._verified.move_to_end(digest)  # the least recently used go first
                return kept.grant
            del self._verified[digest]
        return await self._decoded(token, digest, keys)

    async def _decoded(self, token: str, digest: bytes, keys: SigningKeys) -> Grant:
        config = self.config
        try:
            header = _header(token)
        except ValueError as exc:
            raise TokenRefusedError("neither a client key nor a JWT access token") from exc
        alg = header.get("alg")
        if alg not in config.algorithms:
            allowed = ", ".join(config.algorithms)
            raise TokenRefusedError(f"the token is signed with {alg!r}; accepted: {allowed}")
        named = header.get("kid")
        kid = named if isinstance(named, str) else None
        key = await keys.key(kid)
        import jwt

        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=list(config.algorithms),
                audience=self._audiences,
                issuer=self._issuers,
                leeway=config.leeway_s,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            raise TokenRefusedError(self._why(exc)) from exc
        grant = Grant(claims, _scopes(claims))
        if keys.fetches != self._key_sets_seen:  # drop tokens of keys no longer published
            self._key_sets_seen = keys.fetches
            for gone in [d for d, v in self._verified.items() if keys.held(v.kid) is not v.key]:
                del self._verified[gone]
        # `require` made sure of `exp`; PyJWT accepts it up to the leeway past it.
        until = float(claims["exp"]) + config.leeway_s
        self._verified[digest] = _Verified(until, grant, kid, key)
        while len(self._verified) > self._verified_max:
            self._verified.popitem(last=False)
        return grant

    def _why(self, exc: jwt.PyJWTError) -> str:
        """What is wrong with a token, for the client (never the token itself)."""
        import jwt

        if isinstance(exc, jwt.ExpiredSignatureError):
            return "the access token has expired"
        if isinstance(exc, jwt.ImmatureSignatureError):
            return "the access token is not valid yet"
        if isinstance(exc, jwt.InvalidAudienceError):
            return f"the access token is not for this resource (aud must be {self.config.resource})"
        if isinstance(exc, jwt.InvalidIssuerError):
            return f"the access token was not issued by {self.config.issuer}"
        if isinstance(exc, jwt.InvalidSignatureError):
            return "the access token's signature does not verify"
        if isinstance(exc, jwt.MissingRequiredClaimError):
            return f"the access token has no {exc.claim!r} claim"
        return "the access token is not valid"

    async def _introspected(self, token: str) -> Grant:
        digest = hashlib.sha256(token.encode()).digest()
        kept = self._answers.get(digest)
        if kept is not None:
            if kept[0] > self._clock():
                self._answers.move_to_end(digest)  # the least recently used go first
                return kept[1]
            del self._answers[digest]
        asking = self._asking.get(digest)
        if asking is None:
            # A task of its own: a request that goes away leaves it to those waiting on it
            # (it ends within the timeout).
            asking = asyncio.ensure_future(self._asked(token, digest))
            self._asking[digest] = asking
            asking.add_done_callback(lambda done: self._settled(digest, done))
        return await asyncio.shield(asking)

    def _settled(self, digest: bytes, done: asyncio.Task[Grant]) -> None:
        if self._asking.get(digest) is done:
            del self._asking[digest]
        if not done.cancelled():
            done.exception()  # retrieved, whether or not a request still waits on it

    async def _asked(self, token: str, digest: bytes) -> Grant:
        """The grant of an introspection of `token`, kept for the next requests."""
        answer = await self._introspect(token)
        now = self._clock()
        grant = self._active(answer, now)
        introspection = self.config.introspection
        assert introspection is not None
        until = now + introspection.cache_s
        exp = answer.get("exp")
        if isinstance(exp, int | float):
            until = min(until, float(exp))
        if until > now:
            self._answers[digest] = (until, grant)
            while len(self._answers) > self._answers_max:
                self._answers.popitem(last=False)
        return grant

    async def _introspect(self, token: str) -> dict[str, Any]:
        import aiohttp

        introspection = self.config.introspection
        assert introspection is not None
        form = {"token": token, "token_type_hint": "access_token"}
        headers = {"authorization": _basic(introspection.client_id, introspection.client_secret)}
        failure = "the issuer's introspection endpoint could not be reached"
        try:
            post = self._client().post(introspection.url, data=form, headers=headers)
            async with post as response:
                if response.status != 200:
                    # A 401 here is Toolwire's own client id or secret being refused.
                    failure = f"the issuer's introspection endpoint answered {response.status}"
                    raise ValueError(failure)
                answer = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            log.warning("token introspection failed: %s (%s)", failure, type(exc).__name__)
            raise IssuerUnavailableError(failure, headers={"retry-after": _RETRY_S}) from exc
        if not isinstance(answer, dict):
            raise IssuerUnavailableError(
                "the issuer's introspection endpoint answered no JSON object",
                headers={"retry-after": _RETRY_S},
            )
        return answer

    def _active(self, answer: Mapping[str, Any], now: float) -> Grant:
        """The grant of an introspection answer, checked as a JWT's claims would be."""
        if answer.get("active") is not True:
            raise TokenRefusedError("the access token is not active (expired, revoked or unknown)")
        leeway = self.config.leeway_s
        exp, nbf = answer.get("exp"), answer.get("nbf")
        if isinstance(exp, int | float) and exp + leeway < now:
            raise TokenRefusedError("the access token has expired")
        if isinstance(nbf, int | float) and nbf - leeway > now:
            raise TokenRefusedError("the access token is not valid yet")
        issuer = answer.get("iss")
        if issuer is not None and issuer not in self._issuers:
            raise TokenRefusedError(f"the access token was not issued by {self.config.issuer}")
        audience = answer.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        if not isinstance(audiences, list) or not set(self._audiences) & set(audiences):
            raise TokenRefusedError(
                f"the access token is not for this resource (aud must be {self.config.resource})"
            )
        return Grant(answer, _scopes(answer))

    def _caller(self, claims: Mapping[str, Any], keys: KeyRing) -> Principal:
        callers = self.config.callers
        value = claims.get(callers.claim)
        if not isinstance(value, str) or not value or len(value) > MAX_CALLER_CHARS:
            raise CallerRefusedError(
                f"the access token's {callers.claim!r} claim names no caller "
                f"(a string of 1 to {MAX_CALLER_CHARS} characters)"
            )
        key = callers.keys.get(value)
        if key is not None:
            principal = keys.principal(key)
            assert principal is not None, "the settings check that mapped keys exist"
            return principal
        if callers.default is None:
            raise CallerRefusedError(
                f"the access token's caller ({callers.claim} {value!r}) is not admitted here"
            )
        return self._own_caller(value)

    def _own(self, value: str) -> Principal:
        scope = self.config.callers.default
        assert scope is not None
        return Principal(
            name=TOKEN_PRINCIPAL_PREFIX + value,
            namespaces=frozenset(scope.namespaces) if scope.namespaces is not None else None,
            tags=frozenset(scope.tags) if scope.tags is not None else None,
            rules=tuple(scope.policy),
            requests_per_minute=scope.rate_limit.requests_per_minute,
            tool_calls_per_minute=scope.rate_limit.tool_calls_per_minute,
            code_mode=scope.code_mode,
        )

    async def _get(self, url: str) -> Any:
        """The JSON at `url`, or the issuer's failure (503)."""
        import aiohttp

        failure = f"the issuer's key set at {url} could not be fetched"
        try:
            async with self._client().get(url) as response:
                if response.status != 200:
                    failure = f"the issuer's key set at {url} answered {response.status}"
                    raise ValueError(failure)
                return await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            log.warning("%s (%s)", failure, type(exc).__name__)
            raise IssuerUnavailableError(failure, headers={"retry-after": _RETRY_S}) from exc

    def _client(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session


async def protected_resource(request: Request) -> Response:
    """`GET /.well-known/oauth-protected-resource[/mcp]`: the metadata MCP clients read to
    find the issuer (public, so browser clients may read it from any origin)."""
    services = getattr(request.app.state, "services", None)
    keys = getattr(services, "keys", None)
    tokens: BearerTokens | None = getattr(keys, "tokens", None)
    if tokens is None:
        body = ProxyError("this server accepts no OAuth access tokens", status=404)
        return JSONResponse(body.body(), status_code=404)
    headers = {"access-control-allow-origin": "*", "cache-control": "public, max-age=300"}
    return JSONResponse(tokens.metadata(), headers=headers)


def _header(token: str) -> dict[str, Any]:
    """A JWT's header, unverified, only to pick the key: `jwt.decode` then checks the whole
    token (PyJWT's own reader would decode and check every segment twice).

    Raises:
        ValueError: not a JWT.
    """
    head, dot, _ = token.partition(".")
    if not dot:
        raise ValueError("no JWT")
    header = orjson.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    if not isinstance(header, dict):
        raise ValueError("no JWT header")
    return header


def _scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes a token grants: `scope` (space-separated, RFC 8693) or `scp` (a list)."""
    granted = claims.get("scope", claims.get("scp"))
    if isinstance(granted, str):
        return frozenset(granted.split())
    if isinstance(granted, list):
        return frozenset(s for s in granted if isinstance(s, str))
    return frozenset()


def _basic(client_id: str, secret: str) -> str:
    """HTTP Basic credentials of an OAuth client (RFC 6749 §2.3.1: each part form-encoded)."""
    pair = f"{quote_plus(client_id)}:{quote_plus(secret)}".encode()
    return "Basic " + base64.b64encode(pair).decode()


def _with_and_without_slash(url: str) -> list[str]:
    bare = url.rstrip("/")
    return [bare, bare + "/"]


def _quotable(text: str) -> str:
    """`text` fit for a quoted header parameter."""
    return "".join(c for c in text if c.isprintable() and c not in '"\\')
