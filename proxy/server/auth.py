"""Client authentication at the edge: who is calling, and whether they may call now."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping

from policies import AuthConfig, KeyRing, Principal, RateLimiter

from ..errors import ProxyError

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
    """Checks client keys and their request rates; keeps their keys from the upstream."""

    def __init__(self, config: AuthConfig, limiter: RateLimiter) -> None:
        self.keys = KeyRing.from_config(config)
        self._limiter = limiter
        self._forward = config.forward_client_key
        self._requests: Counter[str] = Counter()

    def requests_by_key(self) -> dict[str, int]:
        """Requests each key name made since start (those refused by its rate limit aside)."""
        return dict(self._requests)

    async def authenticate(self, headers: Mapping[str, str]) -> Principal:
        """The caller a request's key names.

        Raises:
            AuthenticationError: no key, or an unknown one.
            RateLimitedError: the key's requests per minute are used up (`Retry-After`).
        """
        presented = _presented(headers)
        if presented is None:
            raise AuthenticationError(
                "no API key: send it as 'Authorization: Bearer <key>' (or 'x-api-key')"
            )
        principal = self.keys.authenticate(presented)
        if principal is None:
            raise AuthenticationError("the API key is not valid")
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
        self._requests[principal.name] += 1
        return principal

    def upstream_headers(self, headers: dict[str, str]) -> dict[str, str]:
        """The request headers without the client's key, unless it is to be forwarded."""
        if self._forward:
            return headers
        return {k: v for k, v in headers.items() if k not in _CREDENTIALS}


def bearer_token(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` value (the scheme in any case)."""
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _presented(headers: Mapping[str, str]) -> str | None:
    token = bearer_token(headers.get("authorization", ""))
    if token is not None:
        return token
    api_key = headers.get("x-api-key", "").strip()
    return api_key or None
