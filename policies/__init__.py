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
from .call_guards import GuardConfig, Guards
from .context import ANONYMOUS, CallContext
from .decisions import ALLOW, Action, Decision
from .errors import PolicyError
from .filters import NO_FILTER, ToolFilter
from .gate import Admission, BuiltInTool, CallGuards, Gate, GateDecision
from .guards import LoopGuard, LoopLimits
from .policy import Approver, Policy
from .principals import AuthConfig, KeyConfig, KeyRateLimit, KeyRing, Principal, key_digest
from .ratelimit import MemoryRateLimiter, RateLimiter
from .rule_policy import RulePolicy
from .rules import PRESETS, PolicyConfig, Rule, RuleMatch, ThinkAugment, WebhookConfig
from .strictness import Loosening

__all__ = [
    "ALLOW",
    "ANONYMOUS",
    "NO_FILTER",
    "PRESETS",
    "Action",
    "Admission",
    "ApprovalStore",
    "Approver",
    "AuthConfig",
    "BuiltInTool",
    "CallContext",
    "CallGuards",
    "Decision",
    "Gate",
    "GateDecision",
    "GuardConfig",
    "Guards",
    "KeyConfig",
    "KeyRateLimit",
    "KeyRing",
    "LoopGuard",
    "LoopLimits",
    "Loosening",
    "MemoryApprovalStore",
    "MemoryRateLimiter",
    "PendingApproval",
    "Policy",
    "PolicyConfig",
    "PolicyError",
    "Principal",
    "RateLimiter",
    "Rule",
    "RuleMatch",
    "RulePolicy",
    "ThinkAugment",
    "ToolFilter",
    "Verdict",
    "WebhookConfig",
    "conversation_digest",
    "key_digest",
    "new_call_id",
    "parse_verdict",
    "pending",
    "refusal",
]
