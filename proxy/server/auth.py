"""Client authentication at the edge: who is calling, and whether they may call now."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping

from policies import AuthConfig, KeyRing, Principal, RateLimiter

from ..errors import ProxyError
from .bearer_tokens import BearerTokens
from .oauth_config import TOKEN_PRINCIPAL_PREFIX

MINUTE = 60.0
_CREDENTIALS = ("authorization", "x-api-key")


class AuthenticationError(ProxyError):
    """No key, or a key the proxy does not know."""

    status = 401
    type = "invalid_request_error"
    code = "invalid_api_key"


class RateLimitedError(ProxyError):
    """The key has made its requests for this minute."""

    status = 429
    type = "requests"
    code = "rate_limit_exceeded"


class Authenticator:
    """Checks client keys (and, where a route takes them, OAuth access tokens) and their
    callers' request rates; keeps their keys from the upstream."""

    def __init__(
        self,
        config: AuthConfig,
        limiter: RateLimiter,
        tokens: BearerTokens | None = None,
    ) -> None:
        self.keys = KeyRing.from_config(config)
        self.tokens = tokens
        """Access tokens of the trusted issuer (`mcp_server.oauth`), for `/mcp`."""
        self._limiter = limiter
        self._forward = config.forward_client_key
        self._requests: Counter[str] = Counter()

    def requests_by_key(self) -> dict[str, int]:
        """Requests each key name made since start (those refused by its rate limit aside)."""
        return dict(self._requests)

    async def authenticate(self, headers: Mapping[str, str], *, bearer: bool = False) -> Principal:
        """The caller a request's key names; with `bearer`, also the caller an OAuth access
        token of the trusted issuer speaks for (a key is looked for first).

        Raises:
            AuthenticationError: no key, or an unknown one.
            TokenRefusedError, ScopeMissingError, CallerRefusedError, IssuerUnavailableError:
                with `bearer`, a token that is no key was refused (`bearer_tokens`).
            RateLimitedError: the key's requests per minute are used up (`Retry-After`).
        """
        tokens = self.tokens if bearer else None
        presented = _presented(headers)
        if presented is None:
            raise AuthenticationError(
                "no API key: send it as 'Authorization: Bearer <key>' (or 'x-api-key')"
                + (" or an OAuth access token" if tokens is not None else ""),
                headers=_challenged(tokens),
            )
        principal = self.keys.authenticate(presented)
        if principal is None:
            token = bearer_token(headers.get("authorization", ""))
            if tokens is None or token is None:
                raise AuthenticationError("the API key is not valid", headers=_challenged(tokens))
            principal = await tokens.principal(token, self.keys)
        if principal.requests_per_minute is not None:
            wait = await self._limiter.acquire(
                f"key:{principal.name}:requests", principal.requests_per_minute, MINUTE
            )
            if wait is not None:
                seconds = max(1, math.ceil(wait))
                raise RateLimitedError(
                    f"rate limit of {principal.requests_per_minute} requests per minute "
                    f"reached for key {principal.name!r}; retry in {seconds} s",
                    headers={"retry-after": str(seconds)},
                )
        # A token's own callers are counted together: their names are the issuer's to make.
        own = principal.name.startswith(TOKEN_PRINCIPAL_PREFIX)
        self._requests[TOKEN_PRINCIPAL_PREFIX + "*" if own else principal.name] += 1
        return principal

    async def aclose(self) -> None:
        """Close the connections to the token issuer, if any."""
        if self.tokens is not None:
            await self.tokens.aclose()

    def upstream_headers(self, headers: Mapping[str, str]) -> Mapping[str, str]:
        """The request headers without the client's key, unless it is to be forwarded (then
        `headers` themselves)."""
        if self._forward:
            return headers
        return {k: v for k, v in headers.items() if k not in _CREDENTIALS}


def bearer_token(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` value (the scheme in any case)."""
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _challenged(tokens: BearerTokens | None) -> dict[str, str] | None:
    """The headers of a 401 on a route that takes access tokens: where to get one."""
    return {"www-authenticate": tokens.challenge()} if tokens is not None else None


def _presented(headers: Mapping[str, str]) -> str | None:
    token = bearer_token(headers.get("authorization", ""))
    if token is not None:
        return token
    api_key = headers.get("x-api-key", "").strip()
    return api_key or None
