"""Stored Responses API responses: what `previous_response_id` and `GET /v1/responses/{id}` read.

Kept behind a protocol so replicas can share them (a Redis backend); the in-memory store
bounds entries by age and the whole store by bytes. Both keep a response as the same JSON
(`encode`), its owner included: a response is its key's alone (`visible_to`).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from policies import Principal


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """One response and the conversation it ends."""

    response: dict[str, Any]
    """The response object as the client received it."""
    conversation: list[dict[str, Any]]
    """Every input item up to and including this response's output, the proxy's hidden
    tool rounds included: what a follow-up with `previous_response_id` continues."""
    owner: str = ""
    """The name of the client key that made it; empty when authentication is off."""

    def visible_to(self, principal: Principal | None) -> bool:
        """Whether `principal` may read, continue or delete this response: the key that made
        it, and the master key; anyone when authentication is off (no principal).

        A response kept before responses had owners (or while authentication was off) is
        nobody's: with authentication on, only the master key reaches it.
        """
        return principal is None or principal.master or principal.name == self.owner


def encode(stored: StoredResponse) -> bytes:
    """`stored` as every store keeps it: `[response, conversation, owner]`."""
    return orjson.dumps([stored.response, stored.conversation, stored.owner])


def decode(data: bytes | str) -> StoredResponse:
    """A stored response from `encode`'s JSON; one kept without an owner is nobody's."""
    response, conversation, *owner = orjson.loads(data)
    return StoredResponse(response, conversation, owner[0] if owner else "")


class ResponseStore(Protocol):
    """Where responses are kept for follow-ups; in memory, or shared across replicas."""

    async def put(self, response_id: str, stored: StoredResponse) -> None:
        """Keep `stored` under `response_id` until it expires or is evicted."""
        ...

    async def get(self, response_id: str) -> StoredResponse | None:
        """The response kept under `response_id`, or None; whoever owns it (a caller checks
        `visible_to` before it serves, continues or deletes it)."""
        ...

    async def delete(self, response_id: str) -> bool:
        """Forget a response; whether it was there."""
        ...


class MemoryResponseStore:
    """An in-process ResponseStore bounded by age and by total bytes (oldest go first).

    Entries are kept as JSON bytes: the budget is what is held (Python objects would take
    several times their JSON size), and a large store adds nothing to garbage collection.
    """

    def __init__(self, *, ttl_s: float, max_bytes: int) -> None:
        self._ttl = ttl_s
        self._max_bytes = max_bytes
        self._bytes = 0
        self._entries: OrderedDict[str, tuple[float, int, bytes]] = OrderedDict()

    async def put(self, response_id: str, stored: StoredResponse) -> None:
        data = encode(stored)
        size = len(data)
        if size > self._max_bytes:
            return  # larger than the whole store: keeping it would evict everything else
        self._drop(response_id)
        self._entries[response_id] = (time.monotonic() + self._ttl, size, data)
        self._bytes += size
        now = time.monotonic()
        while self._entries and (
            self._bytes > self._max_bytes or next(iter(self._entries.values()))[0] < now
        ):
            self._drop(next(iter(self._entries)))

    async def get(self, response_id: str) -> StoredResponse | None:
        entry = self._entries.get(response_id)
        if entry is None:
            return None
        if entry[0] < time.monotonic():
            self._drop(response_id)
            return None
        return decode(entry[2])

    async def delete(self, response_id: str) -> bool:
        return self._drop(response_id)

    def _drop(self, response_id: str) -> bool:
        entry = self._entries.pop(response_id, None)
        if entry is None:
            return False
        self._bytes -= entry[1]
        return True
