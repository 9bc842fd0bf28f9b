"""What a policy says about one tool call."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Action(StrEnum):
    """The three answers a permission rule can give."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


@dataclass(frozen=True, slots=True)
class Decision:
    """A policy's verdict on one call: the action and, for deny or ask, why."""

    action: Action
    reason: str | None = None

    @property
    def allowed(self) -> bool:
        return self.action is Action.ALLOW


ALLOW = Decision(Action.ALLOW)
