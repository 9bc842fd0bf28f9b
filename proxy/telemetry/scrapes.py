"""Who may read `/metrics`: the operators' keys, not the tenants'.

The metrics name every key and count each one's requests and tokens, so a client key would
read every other tenant's traffic there. A scrape needs the master key, the admin key or the
scrape key (`telemetry.metrics_key`); without `auth:` and without a scrape key `/metrics` is
open, as every route is (the proxy is then meant for loopback).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from policies import KeyRing, key_digest

from ..config import Settings
from ..errors import ProxyError
from ..server.auth import AuthenticationError, bearer_token

_CHALLENGE = {"www-authenticate": "Bearer"}


class ScrapeForbiddenError(ProxyError):
    """A client key asked for the metrics."""

    status = 403
    type = "invalid_request_error"
    code = "forbidden"


class ScrapeKeys:
    """The keys that open `/metrics`: operators' ones, compared as SHA-256 digests in
    constant time; client keys are known only to be refused with a 403."""

    def __init__(self, operator_keys: list[str], clients: KeyRing | None) -> None:
        self._digests = [key_digest(key) for key in operator_keys]
        self._clients = clients

    @classmethod
    def from_settings(cls, settings: Settings) -> ScrapeKeys | None:
        """The keys `settings` configures; None when scrapes need none (no `auth:` and no
        `telemetry.metrics_key`)."""
        auth = settings.auth
        if auth is None and not settings.telemetry.metrics_key:
            return None
        keys = [settings.telemetry.metrics_key, settings.admin.key]
        if auth is not None and auth.master_key:
            keys.append(auth.master_key)
        clients = KeyRing.from_config(auth) if auth is not None else None
        return cls([key for key in keys if key], clients)

    def check(self, headers: Mapping[str, str]) -> None:
        """Pass a request that presents an operator's key.

        Raises:
            AuthenticationError: no key, or one the proxy does not know (401).
            ScrapeForbiddenError: a client key (403).
        """
        presented = bearer_token(headers.get("authorization", ""))
        if presented is None:
            raise AuthenticationError(
                "the metrics need the master, admin or metrics key as a Bearer token",
                headers=_CHALLENGE,
            )
        digest = key_digest(presented)
        if any([hmac.compare_digest(digest, known) for known in self._digests]):
            return
        principal = self._clients.authenticate(presented) if self._clients is not None else None
        if principal is None:
            raise AuthenticationError("the key is not valid", headers=_CHALLENGE)
        raise ScrapeForbiddenError(
            "a client key cannot read the metrics, which cover every key's traffic: use the "
            "master, admin or metrics key"
        )
