"""The address guard as aiohttp's resolver: what the built-in HTTP tools and OpenAPI
sources connect through (aiohttp loads with this module, not with the guard)."""

from __future__ import annotations

import socket

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

from registry.addresses import AddressGuard

__all__ = ["GuardedResolver"]


class GuardedResolver(AbstractResolver):
    """Resolves through `inner` (the system resolver by default) and refuses forbidden
    results; the connection then uses exactly the addresses that were checked (no second
    lookup to rebind to)."""

    def __init__(self, guard: AddressGuard, inner: AbstractResolver | None = None) -> None:
        self._guard = guard
        self._inner = inner or ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """Resolve `host` and check every address.

        Raises:
            BlockedAddressError: an address is forbidden.
            OSError: the name does not resolve.
        """
        results = await self._inner.resolve(host, port, family)
        self._guard.check_resolved(host, [str(r["host"]) for r in results])
        return results

    async def close(self) -> None:
        """Release the resolver."""
        await self._inner.close()

    def __repr__(self) -> str:
        return f"GuardedResolver(allow_private={self._guard.allow_private})"
