"""Which network addresses the HTTP tools may reach (server-side request forgery guard)."""

from __future__ import annotations

import fnmatch
import ipaddress
import socket

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

__all__ = ["AddressGuard", "BlockedAddressError", "GuardedResolver", "is_forbidden"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class BlockedAddressError(Exception):
    """A request would reach an address the HTTP tools may not reach.

    Not an OSError on purpose: aiohttp would wrap an OSError from the resolver into a
    DNS error, hiding why the request was refused.
    """


def is_forbidden(address: IPAddress) -> bool:
    """Whether an address is not public: private, loopback, link-local (the cloud metadata
    service at 169.254.169.254), shared, reserved, multicast or unspecified."""
    if isinstance(address, ipaddress.IPv6Address):
        # Mapped and tunnelled IPv4 addresses are judged by the IPv4 address inside.
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo or (None, None))[1]
        if embedded is not None:
            return is_forbidden(embedded)
    return not address.is_global or address.is_multicast


class AddressGuard:
    """The refusal policy: public addresses only, unless allowed for all or for a host."""

    def __init__(self, *, allow_private: bool = False, allow_hosts: tuple[str, ...] = ()) -> None:
        self.allow_private = allow_private
        self._allow_hosts = tuple(h.lower().rstrip(".") for h in allow_hosts)

    def host_allowed(self, host: str) -> bool:
        """Whether `host` is exempt from the private-address refusal."""
        name = host.lower().rstrip(".")
        return self.allow_private or any(fnmatch.fnmatchcase(name, p) for p in self._allow_hosts)

    def check_literal(self, host: str) -> None:
        """Refuse a URL host that is itself a forbidden IP address.

        Raises:
            BlockedAddressError: the host is a forbidden address and not allowed.
        """
        try:
            address = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            return
        if is_forbidden(address) and not self.host_allowed(host):
            raise BlockedAddressError(f"{host} is a private or local address; refused")

    def check_resolved(self, host: str, addresses: list[str]) -> None:
        """Refuse a host when ANY address it resolves to is forbidden.

        Raises:
            BlockedAddressError: an address is forbidden and the host is not allowed.
        """
        if self.host_allowed(host):
            return
        for text in addresses:
            address = ipaddress.ip_address(text.split("%", 1)[0])
            if is_forbidden(address):
                raise BlockedAddressError(
                    f"{host} resolves to {address}, a private or local address; refused"
                )


class GuardedResolver(AbstractResolver):
    """Resolves through the system resolver and refuses forbidden results; the connection
    then uses exactly the addresses that were checked (no second lookup to rebind)."""

    def __init__(self, guard: AddressGuard) -> None:
        self._guard = guard
        self._resolver = ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """Resolve `host` and check every address.

        Raises:
            BlockedAddressError: an address is forbidden.
            OSError: the name does not resolve.
        """
        results = await self._resolver.resolve(host, port, family)
        self._guard.check_resolved(host, [str(r["host"]) for r in results])
        return results

    async def close(self) -> None:
        """Release the resolver."""
        await self._resolver.close()

    def __repr__(self) -> str:
        return f"GuardedResolver(allow_private={self._guard.allow_private})"
