"""The issuer's signing keys (its JWKS, `mcp_server.oauth.jwks_url`), by `kid`: fetched when a
token first needs one and again when a token names a key not held (a rotation), never more
often than `keys_refetch_s`; only signing keys of an accepted algorithm are kept, and a key
published again unchanged stays the same object, so a verified token stays valid with it."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from .oauth_config import OAuthResourceConfig
from .token_errors import IssuerUnavailableError, TokenRefusedError

if TYPE_CHECKING:  # PyJWT (and cryptography's backends, ~9 MB) load only with mcp_server.oauth
    import jwt

log = logging.getLogger("toolwire.auth")


class SigningKeys:
    """The issuer's public keys by `kid`: fetched when first needed, and again when a token
    names a key not held (a rotation), at most once per `keys_refetch_s`."""

    def __init__(self, config: OAuthResourceConfig, get: Any) -> None:
        assert config.jwks_url is not None
        self._url = config.jwks_url
        self._algorithms = frozenset(config.algorithms)
        self._floor_s = config.keys_refetch_s
        self._get = get
        self._keys: dict[str, jwt.PyJWK] = {}
        self._published: dict[str, Any] = {}
        """Each held key's entry in the key set as published, by its name in `_keys`."""
        self.fetches = 0
        """Key sets fetched and read so far."""
        self._fetched_at: float | None = None
        self._failure: IssuerUnavailableError | None = None
        self._lock = asyncio.Lock()

    async def key(self, kid: str | None) -> jwt.PyJWK:
        """The key a token names (`kid`; without one, the only key held).

        Raises:
            TokenRefusedError: the issuer publishes no such key.
            IssuerUnavailableError: the key set could not be fetched.
        """
        found = self.held(kid)
        if found is not None:
            return found
        async with self._lock:
            found = self.held(kid)  # fetched by another request meanwhile
            if found is None:
                if self._fetched_at is None or self._due():
                    await self._fetch()
                elif self._failure is not None:
                    raise self._failure
                found = self.held(kid)
        if found is None:
            named = f"key {kid!r}" if kid is not None else "no key (kid)"
            raise TokenRefusedError(f"the access token names {named}, not one the issuer holds")
        return found

    def held(self, kid: str | None) -> jwt.PyJWK | None:
        """The key held for `kid` (without one, the only key held), or None. A key published
        again unchanged by a later fetch is the same object."""
        if kid is not None:
            return self._keys.get(kid)
        only = list(self._keys.values())
        return only[0] if len(only) == 1 else None

    def _due(self) -> bool:
        assert self._fetched_at is not None
        return time.monotonic() - self._fetched_at >= self._floor_s

    async def _fetch(self) -> None:
        self._fetched_at = time.monotonic()
        try:
            document = await self._get(self._url)
        except IssuerUnavailableError as exc:
            self._failure = exc
            raise
        self._failure = None
        entries = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            log.warning("the issuer's key set at %s lists no keys", self._url)
            return
        keys: dict[str, jwt.PyJWK] = {}
        published: dict[str, Any] = {}
        for number, entry in enumerate(entries):
            kid = entry.get("kid") if isinstance(entry, dict) else None
            name = kid if isinstance(kid, str) else f"#{number}"
            key = self._keys.get(name) if self._published.get(name) == entry else None
            key = key or self._usable(entry)
            if key is not None:
                keys[name] = key
                published[name] = entry
        self._keys = keys
        self._published = published
        self.fetches += 1

    def _usable(self, entry: Any) -> jwt.PyJWK | None:
        """A signing key of an accepted algorithm, else None (encryption and shared-secret
        keys are never used)."""
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            return None
        if entry.get("kty") == "oct":
            return None
        import jwt

        try:
            key = jwt.PyJWK(entry)
        except jwt.PyJWTError:
            return None
        return key if key.algorithm_name in self._algorithms else None
