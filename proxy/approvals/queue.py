"""The queue of paused calls as an operator sees it, and the verdicts an operator gives.

An operator's verdict (from the admin API) is kept in the outcome store and decides the
call when its client continues: the client's tool message for the call then only has to
arrive, whatever it says, except that a client's own refusal still wins. It has to arrive
under the key that paused the call (each entry names it, `owner`): under any other key the
call is unknown, approved or not. The open calls are
listed from an `OpenApprovalStore`: this process's memory, or Redis, where every replica
lists every replica's paused calls and sees every operator's verdict.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from policies import ApprovalStore, Verdict
from registry import RegistryError, ToolCall, parse_arguments, redact

from ..state.base import OpenApproval, OpenApprovalStore, TurnStore
from ..state.memory import MemoryOpenApprovalStore

_VERDICT_KEY = "operator-verdict:"


class ApprovalNotPendingError(LookupError):
    """No approval is pending for that call id (unknown, used or expired)."""


class ApprovalQueue:
    """Open approvals, and operators' verdicts on them."""

    def __init__(
        self,
        store: ApprovalStore,
        outcomes: TurnStore,
        listed: OpenApprovalStore | None = None,
    ) -> None:
        self._store = store
        self._outcomes = outcomes
        self._listed: OpenApprovalStore = (
            listed if listed is not None else MemoryOpenApprovalStore()
        )

    async def add(
        self, call: ToolCall, tool: str, reason: str, expires_at: float, *, owner: str = ""
    ) -> None:
        """Note a call the key named `owner` just paused for approval.

        Raises:
            StateUnavailableError: the shared state (Redis) cannot be reached.
        """
        try:
            arguments: Any = redact(parse_arguments(call.arguments))
        except RegistryError:  # unreadable arguments may hold a secret in any shape
            arguments = {"_unparsed": f"{len(str(call.arguments))} characters"}
        await self._listed.put(
            OpenApproval(call.id, tool, arguments, reason, time.time(), expires_at, owner=owner)
        )

    async def pending(self) -> list[OpenApproval]:
        """The approvals still open (not used, not expired), oldest first, each with the
        operator's verdict once given. Raises StateUnavailableError (Redis)."""
        now = time.time()
        kept: list[OpenApproval] = []
        gone: list[str] = []
        for entry in await self._listed.all():
            if entry.expires_at < now or await self._store.get(entry.call_id) is None:
                gone.append(entry.call_id)
            else:
                kept.append(entry)
        if gone:
            await self._listed.discard(gone)
        if not kept:
            return []
        found = await self._outcomes.get_many(self.keys([e.call_id for e in kept]))
        return [
            entry if decided is None else _decided(entry, decided[0].approved, decided[1])
            for entry, decided in zip(kept, self.verdicts(found), strict=True)
        ]

    async def decide(self, call_id: str, *, approved: bool, reason: str, by: str) -> OpenApproval:
        """Record an operator's verdict on an open approval.

        Raises:
            ApprovalNotPendingError: no open approval has that id.
            StateUnavailableError: the shared state (Redis) cannot be reached.
        """
        approval = await self._store.get(call_id)
        if approval is None or approval.expires_at < time.time():
            await self._listed.discard([call_id])
            raise ApprovalNotPendingError(f"no approval is pending for call {call_id!r}")
        verdict = {"approve": approved, "reason": reason, "by": by}
        await self._outcomes.put(_VERDICT_KEY + call_id, [verdict])
        entry = await self._listed.get(call_id)
        if entry is None:
            entry = OpenApproval(
                call_id, approval.tool, None, "", 0.0, approval.expires_at, owner=approval.owner
            )
        return _decided(entry, approved, by)

    @staticmethod
    def keys(call_ids: list[str]) -> list[str]:
        """The outcome-store keys of the verdicts on these calls (read with `verdicts`)."""
        return [_VERDICT_KEY + c for c in call_ids]

    @staticmethod
    def verdicts(kept: list[list[dict[str, Any]] | None]) -> list[tuple[Verdict, str] | None]:
        """The operator's verdict and who gave it, from what the store held under `keys`."""
        found: list[tuple[Verdict, str] | None] = []
        for messages in kept:
            if not messages:
                found.append(None)
                continue
            data = messages[0]
            approved, by = bool(data.get("approve")), str(data.get("by", ""))
            reason = str(data.get("reason") or "")
            if not approved:
                reason = f"{reason} (decided by the operator {by})".lstrip()
            found.append((Verdict(approved, reason or None), by))
        return found


def _decided(entry: OpenApproval, approved: bool, by: str) -> OpenApproval:
    return replace(entry, decided_by=by, approved=approved)
