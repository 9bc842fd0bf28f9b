"""The names this server answers to: the `Host` and `Origin` checks that keep web pages from
steering the admin and `/mcp` across origins or after DNS rebinding.

A page the user opens can send requests to `127.0.0.1`, and after rebinding its own name to
this machine's address it can read the answers too; its requests then carry its name in
`Host` and `Origin`. So both must name this machine: a loopback name or address, a name in
`server.allowed_hosts`, the host the server was told to bind (unless a wildcard), or the
address the connection itself reached (a page opened at that address is this server's own).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

_WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]", "*"})


class AllowedHosts:
    """Checks a request's `Host` and (when a browser sent one) `Origin`."""

    def __init__(self, names: Iterable[str], bound: str = "") -> None:
        allowed = {_normal(name) for name in names}
        if bound not in _WILDCARDS:
            allowed.add(_normal(bound))
        self._names = frozenset(allowed | {"localhost"})

    def refusal(self, headers: Mapping[str, str], local: object) -> str | None:
        """Why the request must be refused (a 403), or None when it names this server.

        `local` is the ASGI scope's `server`: the address the connection reached.
        """
        host = headers.get("host")
        if host is None or not self._allows(_host_name(host), local):
            return f"host not allowed: {host}; add it to server.allowed_hosts"
        origin = headers.get("origin")
        if origin is not None and not self._allows(_origin_name(origin), local):
            return f"origin not allowed: {origin}"
        return None

    def _allows(self, name: str, local: object) -> bool:
        if name in self._names:
            return True
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            return False  # a name not configured, or nothing parseable
        if address.is_loopback:
            return True
        if isinstance(local, tuple | list) and local and isinstance(local[0], str):
            try:
                return address == ipaddress.ip_address(local[0])
            except ValueError:
                return False
        return False


def _normal(name: str) -> str:
    return name.strip().lower().removeprefix("[").removesuffix("]").rstrip(".")


def _host_name(host: str) -> str:
    """The name in a `Host` header (`name`, `name:port`, `[v6]:port`); '' when malformed."""
    host = host.strip().lower()
    if host.startswith("["):
        name, bracket, port = host[1:].partition("]")
        if not bracket or (port and not (port.startswith(":") and port[1:].isdigit())):
            return ""
        return name
    name, colon, port = host.partition(":")
    if colon and not port.isdigit():
        return ""  # a second colon (a bare IPv6 address) or a port that is not one
    return name.rstrip(".")


def _origin_name(origin: str) -> str:
    """The host of a browser's `Origin` (`scheme://host[:port]`); '' for `null` or others."""
    try:
        parts = urlsplit(origin.strip())
        name = parts.hostname
    except ValueError:
        return ""
    if parts.scheme not in ("http", "https") or not name or parts.username is not None:
        return ""
    return name.rstrip(".")
