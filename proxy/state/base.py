"""Every store a replica may share, as a protocol, and the records the stores hold.

Each protocol has an in-memory implementation (`memory.py`) and a Redis one (`redis.py`,
`redis_approvals.py`). The approval store and the rate limiter are the policies' seams;
they are named here too, so this module is the one place to look.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from policies import ApprovalStore, PendingApproval, Principal, RateLimiter

__all__ = [
    "MAX_OPEN",
    "ApprovalStore",
    "Message",
    "ModeStore",
    "OpenApproval",
    "OpenApprovalStore",
    "PendingApproval",
    "RateLimiter",
    "ResponseStore",
    "StoredResponse",
    "TurnStore",
    "decode",
    "encode",
]

Message = dict[str, Any]

MAX_OPEN = 1000
"""Open approvals listed at most; past it the oldest is no longer listed (still valid)."""


class TurnStore(Protocol):
    """Where pending turns (and approval outcomes) wait: in memory, or shared in Redis."""

    async def put(self, key: str, messages: list[Message]) -> None:
        """Keep `messages` under `key` until they expire."""
        ...

    async def get(self, key: str) -> list[Message] | None:
        """The messages kept under `key`, or None."""
        ...

    async def get_many(self, keys: list[str]) -> list[list[Message] | None]:
        """The messages kept under each key, in order (None where absent): one lookup."""
        ...

    async def add(self, key: str, messages: list[Message]) -> list[Message] | None:
        """Keep `messages` under `key` unless something is kept there already (atomic);
        None when kept, else what was there first."""
        ...


@dataclass(slots=True)
class StoredResponse:
    """One Responses API response and the conversation it ends: what `previous_response_id`
    and `GET /v1/responses/{id}` read.

    Not changed once made, though not frozen: one is made per stored response, and a frozen
    dataclass sets each field through `object.__setattr__` (about four times the cost)."""

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


def encode(stored: StoredResponse, response_json: bytes | None = None) -> bytes:
    """`stored` as every store keeps it: `[response, conversation, owner]`. `response_json`:
    the response already serialized (the bytes its client received), spliced in as it is
    rather than serialized again."""
    response = stored.response if response_json is None else orjson.Fragment(response_json)
    return orjson.dumps([response, stored.conversation, stored.owner])


def decode(data: bytes | str) -> StoredResponse:
    """A stored response from `encode`'s JSON; one kept without an owner is nobody's."""
    response, conversation, *owner = orjson.loads(data)
    return StoredResponse(response, conversation, owner[0] if owner else "")


class ResponseStore(Protocol):
    """Where responses are kept for follow-ups; in memory, or shared across replicas.

    A response is its key's alone: a caller checks `StoredResponse.visible_to`.
    """

    async def put(
        self, response_id: str, stored: StoredResponse, response_json: bytes | None = None
    ) -> None:
        """Keep `stored` under `response_id` until it expires or is evicted; `response_json`:
        its response as already serialized, if it was (`encode`)."""
        ...

    async def get(self, response_id: str) -> StoredResponse | None:
        """The response kept under `response_id`, or None; whoever owns it (a caller checks
        `visible_to` before it serves, continues or deletes it)."""
        ...

    async def delete(self, response_id: str) -> bool:
        """Forget a response; whether it was there."""
        ...


@dataclass(frozen=True, slots=True)
class OpenApproval:
    """A call waiting for a verdict, as the operators' queue lists it."""

    call_id: str
    tool: str
    arguments: Any
    """The call's arguments, secrets redacted."""
    reason: str
    requested_at: float
    expires_at: float
    decided_by: str | None = None
    approved: bool | None = None
    """The operator's verdict, once given."""
    owner: str = ""
    """The name of the client key whose request paused the call, the only key that can
    continue it; empty when authentication is off (and in entries listed before owners)."""


class OpenApprovalStore(Protocol):
    """Where the open approvals are listed; each entry is kept at least until it expires."""

    async def put(self, entry: OpenApproval) -> None:
        """List `entry` (the oldest entries past `MAX_OPEN` are dropped)."""
        ...

    async def get(self, call_id: str) -> OpenApproval | None:
        """The entry of `call_id`, or None."""
        ...

    async def all(self) -> list[OpenApproval]:
        """Every listed entry, oldest first."""
        ...

    async def discard(self, call_ids: list[str]) -> None:
        """Stop listing these calls."""
        ...


class ModeStore(Protocol):
    """Remembers which models an `auto` upstream serves by emulation (in memory, or shared)."""

    async def is_emulated(self, model: str) -> bool:
        """Whether `model` was found to reject native tools."""
        ...

    async def mark_emulated(self, model: str) -> None:
        """Remember that `model` rejects native tools."""
        ...
