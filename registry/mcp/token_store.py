"""Where MCP sources keep their OAuth grants: a store of opaque records behind a protocol
(memory here, Redis in the proxy's state). No MCP SDK import: the proxy builds its store
whether or not a source uses MCP."""

from __future__ import annotations

import math
import time
from typing import Protocol

__all__ = ["MemoryTokenStore", "TokenStore", "token_store", "use_token_store"]


class TokenStore(Protocol):
    """Grant records by key (a source, or a source and a client key)."""

    async def load(self, key: str) -> bytes | None:
        """The record kept under `key`, or None.

        Raises:
            StateUnavailableError: the shared store cannot be reached.
        """
        ...

    async def save(self, key: str, record: bytes, ttl_s: float | None = None) -> None:
        """Keep `record` under `key` (replacing any), for `ttl_s` seconds (None: for good)."""
        ...

    async def delete(self, key: str) -> None: ...


class MemoryTokenStore:
    """Grant records of one process (lost when it stops)."""

    def __init__(self) -> None:
        self._records: dict[str, tuple[bytes, float]] = {}

    async def load(self, key: str) -> bytes | None:
        found = self._records.get(key)
        if found is None:
            return None
        if found[1] < time.monotonic():
            del self._records[key]
            return None
        return found[0]

    async def save(self, key: str, record: bytes, ttl_s: float | None = None) -> None:
        until = math.inf if ttl_s is None else time.monotonic() + ttl_s
        self._records[key] = (record, until)
        if ttl_s is not None:  # a login begun and abandoned is not kept past its end
            now = time.monotonic()
            for stale in [k for k, (_, end) in self._records.items() if end < now]:
                del self._records[stale]

    async def delete(self, key: str) -> None:
        self._records.pop(key, None)


_store: TokenStore = MemoryTokenStore()


def use_token_store(store: TokenStore) -> None:
    """Keep MCP sources' grants in `store` from now on (the proxy sets its state's at start;
    sources read it at each use, so a reloaded source finds the same grants)."""
    global _store
    _store = store


def token_store() -> TokenStore:
    """The store MCP sources keep their grants in (a memory one until one is set)."""
    return _store
