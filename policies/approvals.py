"""Approvals for `ask` tools: bound to one call's tool, arguments and expiry, used once."""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

import orjson


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A call the proxy paused until the client approves or refuses it."""

    call_id: str
    tool: str
    """The tool's qualified name."""
    arguments_digest: str
    expires_at: float
    """Wall-clock time (epoch seconds) after which an answer is refused."""
    conversation: str = ""
    """Digest of the conversation the call was paused in (see `conversation_digest`)."""
    owner: str = ""
    """The name of the client key whose request paused the call; empty when authentication
    is off (and in records written before approvals had owners)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The client's answer to a pending call."""

    approved: bool
    reason: str | None = None


class ApprovalStore(Protocol):
    """Where pending approvals wait; in memory now, shared (Redis) when the proxy scales out."""

    async def put(self, approval: PendingApproval) -> None:
        """Keep a pending approval until it is taken or expires."""
        ...

    async def get(self, call_id: str) -> PendingApproval | None:
        """The approval for `call_id`, left in place (to check an answer before using it)."""
        ...

    async def take(self, call_id: str) -> PendingApproval | None:
        """Remove and return the approval for `call_id`, atomically: of any number of
        concurrent takers, one gets it (so it is used once)."""
        ...


_EXPIRED_KEPT_S = 3600.0
_UNKNOWN = "no approval is pending for this call (unknown, already used, or not issued)"


class MemoryApprovalStore:
    """A bounded in-process ApprovalStore."""

    def __init__(self, *, max_entries: int = 10_000) -> None:
        self._max = max_entries
        self._entries: OrderedDict[str, PendingApproval] = OrderedDict()

    async def put(self, approval: PendingApproval) -> None:
        # Entries are small and alike, so a count bounds their bytes. Long-expired ones go
        # first; recently expired ones stay a while, so an answer learns it came too late.
        self._entries[approval.call_id] = approval
        stale = time.time() - _EXPIRED_KEPT_S
        while self._entries and (
            len(self._entries) > self._max or next(iter(self._entries.values())).expires_at < stale
        ):
            self._entries.popitem(last=False)

    async def get(self, call_id: str) -> PendingApproval | None:
        return self._entries.get(call_id)

    async def take(self, call_id: str) -> PendingApproval | None:
        return self._entries.pop(call_id, None)


def new_call_id() -> str:
    """An unguessable call id the proxy issues for a call that needs approval."""
    return f"call_tw{secrets.token_hex(16)}"


def digest(arguments: str | dict[str, Any]) -> str:
    """A digest of a call's arguments that ignores key order and whitespace."""
    value: Any = arguments
    if isinstance(arguments, str):
        try:
            value = orjson.loads(arguments or "{}")
        except orjson.JSONDecodeError:
            return hashlib.sha256(arguments.encode()).hexdigest()
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


def pending(
    call_id: str,
    tool: str,
    arguments: str | dict[str, Any],
    ttl_s: float,
    conversation: str = "",
    owner: str = "",
) -> PendingApproval:
    """A pending approval for one call in one conversation of one key (`owner`), expiring
    `ttl_s` from now."""
    return PendingApproval(
        call_id, tool, digest(arguments), time.time() + ttl_s, conversation, owner
    )


def conversation_digest(messages: list[dict[str, Any]]) -> str:
    """A digest of a conversation's turns that survives a client's re-serialisation.

    Only what the parties said counts: roles, text, tool-call ids and the ids results
    answer. System and developer messages are left out, so a client may restate its
    instructions; an approval pasted into another conversation still fails to match.
    """
    said: list[Any] = []
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            continue
        calls = message.get("tool_calls") or ()
        said.append(
            (
                role,
                _text(message.get("content")),
                [c.get("id") for c in calls if isinstance(c, dict)],
                message.get("tool_call_id"),
            )
        )
    return hashlib.sha256(orjson.dumps(said)).hexdigest()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if isinstance(part, dict):
            value = part.get("text", part.get("image_url", ""))
            texts.append(value if isinstance(value, str) else orjson.dumps(value).decode())
    return "".join(texts)


def parse_verdict(content: Any) -> Verdict | None:
    """The verdict in a tool message's content, or None when it holds no verdict.

    Accepts `{"approve": true}` or `{"approve": false, "reason": "…"}` as a JSON string or
    as a text content part.
    """
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        content = "".join(t for t in texts if isinstance(t, str))
    if not isinstance(content, str):
        return None
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("approve"), bool):
        return None
    reason = value.get("reason")
    return Verdict(value["approve"], reason if isinstance(reason, str) else None)


def refusal(
    approval: PendingApproval | None,
    tool: str,
    arguments: Any,
    conversation: str = "",
    owner: str = "",
) -> str | None:
    """Why an answer to a pending call, sent under the key named `owner`, cannot count as an
    approval, or None when it can."""
    if approval is None or approval.owner != owner:
        # Another key's approval reads exactly as none: its existence is not told either.
        return _UNKNOWN
    if approval.tool != tool:
        return "the approval was issued for another tool"
    if approval.arguments_digest != digest(arguments):
        return "the call's arguments changed after the approval was requested"
    if approval.conversation != conversation:
        return "the approval was issued in another conversation"
    if time.time() > approval.expires_at:
        return "the approval expired"
    return None
