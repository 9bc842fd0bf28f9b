"""Who may use the admin API: the admin key, or the master key."""

from __future__ import annotations

import hmac
import ipaddress

from fastapi import HTTPException, Request

from policies import KeyRing, key_digest

from ..server.auth import bearer_token

_LOCAL = "local"
_UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}


class AdminAuth:
    """Checks a request's `Authorization: Bearer` key; the admin key is held hashed.

    With neither an admin key nor a master key configured, only clients on this machine
    (loopback) are let in, as `local`.
    """

    def __init__(self, admin_key: str, keys: KeyRing | None, *, has_master: bool) -> None:
        self._digest = key_digest(admin_key) if admin_key else None
        self._keys = keys
        self._open_locally = self._digest is None and not has_master

    def caller(self, request: Request) -> str:
        """The name the caller acts under: `admin`, the master key's name, or `local`.

        Raises:
            HTTPException: 401 without a key or with an unknown one; 403 with a client key
                that is not the master key, or from another host when no key is configured.
        """
        presented = bearer_token(request.headers.get("authorization", ""))
        if presented is None:
            if self._open_locally:
                if _loopback(request):
                    return _LOCAL
                raise HTTPException(
                    403, "set admin.key or auth.master_key to use the admin API from elsewhere"
                )
            raise HTTPException(
                401, "send the admin or master key as a Bearer token", _UNAUTHORIZED
            )
        digest = key_digest(presented)
        if self._digest is not None and hmac.compare_digest(digest, self._digest):
            return "admin"
        principal = self._keys.authenticate(presented) if self._keys is not None else None
        if principal is None:
            raise HTTPException(401, "the key is not valid", _UNAUTHORIZED)
        if not principal.master:
            raise HTTPException(403, "a client key cannot use the admin API")
        return principal.name

    def has_key(self, name: str) -> bool:
        """Whether a client key of this name is configured."""
        return self._keys is not None and self._keys.principal(name) is not None


def _loopback(request: Request) -> bool:
    host = request.client.host if request.client is not None else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
