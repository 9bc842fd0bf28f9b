"""Who may see and call which tools, and the limits of one tool loop."""

from __future__ import annotations

from .approvals import (
    ApprovalStore,
    MemoryApprovalStore,
    PendingApproval,
    Verdict,
    conversation_digest,
    new_call_id,
    parse_verdict,
    pending,
    refusal,
)
from .decisions import ALLOW, Action, Decision
from .errors import PolicyError
from .filters import NO_FILTER, ToolFilter
from .guards import LoopGuard, LoopLimits
from .policy import Policy
from .rules import PolicyConfig, Rule, RuleMatch, RulePolicy

__all__ = [
    "ALLOW",
    "NO_FILTER",
    "Action",
    "ApprovalStore",
    "Decision",
    "LoopGuard",
    "LoopLimits",
    "MemoryApprovalStore",
    "PendingApproval",
    "Policy",
    "PolicyConfig",
    "PolicyError",
    "Rule",
    "RuleMatch",
    "RulePolicy",
    "ToolFilter",
    "Verdict",
    "conversation_digest",
    "new_call_id",
    "parse_verdict",
    "pending",
    "refusal",
]
