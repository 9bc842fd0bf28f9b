"""MCP sources' OAuth grants (tokens, client registrations) in the shared state: in Redis, one
string per grant, so that every replica presents the tokens one fetched or an operator's
login stored, and they outlive a restart. (The memory store is the registry's own.)

Redis holds the tokens as they are: protect it as the credentials it keeps (ACLs, TLS,
no persistence to shared disks), as for the client keys it already serves.
"""

from __future__ import annotations

from registry import MemoryTokenStore, TokenStore

from .redis import RedisState, reaching

__all__ = ["MemoryTokenStore", "RedisTokenStore", "TokenStore"]

_KIND = "oauth"


class RedisTokenStore:
    """Grant records in Redis: a grant without expiry (a refresh token outlives its access
    token), a login in progress for its ten minutes."""

    def __init__(self, state: RedisState) -> None:
        self._state = state

    async def load(self, key: str) -> bytes | None:
        with reaching("reading an MCP server's OAuth tokens"):
            raw = await self._state.client.get(self._state.key(_KIND, key))
        return raw.encode() if isinstance(raw, str) else raw

    async def save(self, key: str, record: bytes, ttl_s: float | None = None) -> None:
        px = None if ttl_s is None else max(1, int(ttl_s * 1000))
        with reaching("keeping an MCP server's OAuth tokens"):
            await self._state.client.set(self._state.key(_KIND, key), record, px=px)

    async def delete(self, key: str) -> None:
        with reaching("forgetting an MCP server's OAuth tokens"):
            await self._state.client.delete(self._state.key(_KIND, key))
