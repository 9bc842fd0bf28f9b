"""Which network addresses tools may reach: the one server-side request forgery guard.

Used by the built-in HTTP tools and by OpenAPI sources (for service URLs, including those
named by a fetched spec). A host is refused when ANY address it resolves to is forbidden,
and the connection then uses exactly the addresses that were checked.
"""

from __future__ import annotations

import fnmatch
import ipaddress

__all__ = ["AddressGuard", "BlockedAddressError", "is_forbidden"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
"""The well-known NAT64 prefix (RFC 6052): the last 32 bits are the IPv4 address reached."""
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
"""The local-use NAT64 prefix (RFC 8215): where it leads is the local network's choice."""
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
"""Deprecated IPv4-compatible addresses (`::127.0.0.1`), `::` and `::1` included."""
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
"""SIIT IPv4-translated addresses (RFC 2765)."""
_LOW_32_BITS = 0xFFFFFFFF
_LITERALS_KEPT = 256


class BlockedAddressError(Exception):
    """A request would reach an address tools may not reach.

    Not an OSError on purpose: aiohttp would wrap an OSError from the resolver into a
    DNS error, hiding why the request was refused.
    """


def is_forbidden(address: IPAddress) -> bool:
    """Whether an address is not public: private, loopback, link-local (the cloud metadata
    service at 169.254.169.254), shared, reserved, multicast or unspecified.

    An IPv6 address that carries an IPv4 address (mapped, compatible, translated, NAT64,
    6to4, Teredo) is judged by the IPv4 address inside; other IPv6 addresses must be
    global unicast (2000::/3).
    """
    if isinstance(address, ipaddress.IPv4Address):
        return not address.is_global or address.is_multicast
    if address in _NAT64_LOCAL:
        return True
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        return is_forbidden(embedded)
    return address not in _GLOBAL_UNICAST or not address.is_global


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _IPV4_COMPATIBLE or address in _IPV4_TRANSLATED or address in _NAT64:
        return ipaddress.IPv4Address(int(address) & _LOW_32_BITS)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


class AddressGuard:
    """The refusal policy: public addresses only, unless allowed for all or for a host.

    `allow_private` may be changed while the guard is in use (a reloaded OpenAPI spec).
    """

    def __init__(self, *, allow_private: bool = False, allow_hosts: tuple[str, ...] = ()) -> None:
        self.allow_private = allow_private
        self._allow_hosts = tuple(h.lower().rstrip(".") for h in allow_hosts)
        self._literals: dict[str, bool] = {}
        """Per URL host seen, whether it is a forbidden IP literal (see `_forbidden_literal`)."""

    def host_allowed(self, host: str) -> bool:
        """Whether `host` is exempt from the private-address refusal."""
        name = host.lower().rstrip(".")
        return self.allow_private or any(fnmatch.fnmatchcase(name, p) for p in self._allow_hosts)

    @staticmethod
    def is_literal(host: str) -> bool:
        """Whether a URL host is an IP address rather than a name."""
        return _literal(host) is not None

    def check_literal(self, host: str) -> None:
        """Refuse a URL host that is itself a forbidden IP address (a name passes: it is
        checked when it is resolved).

        Raises:
            BlockedAddressError: the host is a forbidden address and not allowed.
        """
        if self._forbidden_literal(host) and not self.host_allowed(host):
            raise BlockedAddressError(f"refused: {host} is a non-public address")

    def _forbidden_literal(self, host: str) -> bool:
        """Whether `host` is a forbidden IP literal, parsed once per host: a service's calls
        all go to the same host, and what a literal's text means never changes. (A name is
        kept as not one: the resolver judges what it resolves to, on every call.)"""
        known = self._literals.get(host)
        if known is None:
            address = _literal(host)
            known = address is not None and is_forbidden(address)
            if len(self._literals) >= _LITERALS_KEPT:
                self._literals.clear()  # hosts from models' URLs: keep the memo small
            self._literals[host] = known
        return known

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
                    f"refused: {host} resolves to {address}, a non-public address"
                )


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
