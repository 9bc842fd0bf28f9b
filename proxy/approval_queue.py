"""The queue of paused calls as an operator sees it, and the verdicts an operator gives.

An operator's verdict (from the admin API) is kept in the outcome store, which replicas
share, and decides the call when its client continues: the client's tool message for the
call then only has to arrive, whatever it says, except that a client's own refusal still
wins. The list of open approvals is this process's own (the approval store is not
enumerable): on replicas, each lists the calls it paused.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

from policies import ApprovalStore, Verdict
from registry import RegistryError, ToolCall, parse_arguments, redact

from .continuations import TurnStore

_VERDICT_KEY = "operator-verdict:"
_MAX_OPEN = 1000


@dataclass(frozen=True, slots=True)
class OpenApproval:
    """A call waiting for a verdict."""

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


class ApprovalNotPendingError(LookupError):
    """No approval is pending for that call id (unknown, used or expired)."""


class ApprovalQueue:
    """Open approvals of this process, and operators' verdicts on them."""

    def __init__(self, store: ApprovalStore, outcomes: TurnStore) -> None:
        self._store = store
        self._outcomes = outcomes
        self._open: OrderedDict[str, OpenApproval] = OrderedDict()

    def add(self, call: ToolCall, tool: str, reason: str, expires_at: float) -> None:
        """Note a call just paused for approval."""
        try:
            arguments: Any = redact(parse_arguments(call.arguments))
        except RegistryError:  # unreadable arguments may hold a secret in any shape
            arguments = {"_unparsed": f"{len(str(call.arguments))} characters"}
        self._open[call.id] = OpenApproval(
            call.id, tool, arguments, reason, time.time(), expires_at
        )
        while len(self._open) > _MAX_OPEN:
            self._open.popitem(last=False)

    async def pending(self) -> list[OpenApproval]:
        """The approvals still open (not used, not expired), oldest first."""
        now = time.time()
        kept = []
        for call_id, entry in list(self._open.items()):
            if entry.expires_at < now or await self._store.get(call_id) is None:
                self._open.pop(call_id, None)
                continue
            kept.append(entry)
        return kept

    async def decide(self, call_id: str, *, approved: bool, reason: str, by: str) -> OpenApproval:
        """Record an operator's verdict on an open approval.

        Raises:
            ApprovalNotPendingError: no open approval has that id.
        """
        approval = await self._store.get(call_id)
        entry = self._open.get(call_id)
        if approval is None or approval.expires_at < time.time():
            self._open.pop(call_id, None)
            raise ApprovalNotPendingError(f"no approval is pending for call {call_id!r}")
        verdict = {"approve": approved, "reason": reason, "by": by}
        await self._outcomes.put(_VERDICT_KEY + call_id, [verdict])
        if entry is None:
            entry = OpenApproval(call_id, approval.tool, None, "", 0.0, approval.expires_at)
        entry = replace(entry, decided_by=by, approved=approved)
        self._open[call_id] = entry
        return entry

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
