"""The address guard's remaining edges: Teredo judged by its client, the resolver's lifecycle."""

from __future__ import annotations

import ipaddress
import socket

from aiohttp.abc import AbstractResolver, ResolveResult

from registry.addresses import AddressGuard, is_forbidden
from registry.resolver import GuardedResolver


def test_a_teredo_address_is_judged_by_the_client_it_carries() -> None:
    # Server 4.4.4.4; the client (8.8.8.8 or 127.0.0.1) is stored inverted in the last 32 bits.
    public = ipaddress.IPv6Address("2001:0:404:404::f7f7:f7f7")
    loopback = ipaddress.IPv6Address("2001:0:404:404::80ff:fffe")
    assert public.teredo is not None and str(public.teredo[1]) == "8.8.8.8"
    assert not is_forbidden(public)
    assert is_forbidden(loopback)


class Recording(AbstractResolver):
    def __init__(self) -> None:
        self.closed = False

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return []

    async def close(self) -> None:
        self.closed = True


async def test_closing_the_guarded_resolver_closes_the_one_inside() -> None:
    inner = Recording()
    await GuardedResolver(AddressGuard(), inner).close()
    assert inner.closed


def test_the_guarded_resolver_says_whether_private_addresses_are_allowed() -> None:
    assert repr(GuardedResolver(AddressGuard(), Recording())) == (
        "GuardedResolver(allow_private=False)"
    )
    allowed = GuardedResolver(AddressGuard(allow_private=True), Recording())
    assert repr(allowed) == "GuardedResolver(allow_private=True)"
