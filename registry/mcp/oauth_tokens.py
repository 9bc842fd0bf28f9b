"""The grant record of an MCP source's OAuth client (tokens, their expiry, the client
registration, the authorization server's metadata), read and written by the `mcp` SDK's
client."""

from __future__ import annotations

import time

import orjson
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken
from pydantic import BaseModel, ConfigDict, ValidationError

from registry.mcp.token_store import TokenStore, token_store

__all__ = ["GrantRecord", "SourceTokens"]


class GrantRecord(BaseModel):
    """What is kept of one grant: the tokens, when the access token expires, the client
    registration and the authorization server's metadata (where refreshes go)."""

    model_config = ConfigDict(extra="ignore")

    tokens: OAuthToken | None = None
    expires_at: float | None = None
    client_info: OAuthClientInformationFull | None = None
    metadata: OAuthMetadata | None = None
    obtained_at: float | None = None

    @classmethod
    def parse(cls, raw: bytes | None) -> GrantRecord:
        """A stored record; an unreadable one (from another version) reads as empty."""
        if raw is None:
            return cls()
        try:
            return cls.model_validate(orjson.loads(raw))
        except (orjson.JSONDecodeError, ValidationError):
            return cls()

    def dump(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json", exclude_none=True))


class SourceTokens:
    """One grant's record in the store, as the SDK's `TokenStorage` it reads and writes."""

    def __init__(self, key: str, store: TokenStore | None = None) -> None:
        self.key = key
        self._store = store

    @property
    def store(self) -> TokenStore:
        return self._store if self._store is not None else token_store()

    async def record(self) -> GrantRecord:
        return GrantRecord.parse(await self.store.load(self.key))

    async def put(self, record: GrantRecord) -> None:
        await self.store.save(self.key, record.dump())

    async def clear(self) -> None:
        await self.store.delete(self.key)

    async def get_tokens(self) -> OAuthToken | None:
        return (await self.record()).tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record = await self.record()
        now = time.time()
        expires_at = now + int(tokens.expires_in) if tokens.expires_in is not None else None
        await self.put(
            record.model_copy(
                update={"tokens": tokens, "expires_at": expires_at, "obtained_at": now}
            )
        )

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return (await self.record()).client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        record = await self.record()
        await self.put(record.model_copy(update={"client_info": client_info}))
