"""The context every check receives: who is calling, in which request, asking what."""

from __future__ import annotations

from dataclasses import dataclass

from .principals import Principal


@dataclass(frozen=True, slots=True)
class CallContext:
    """What a policy, a guard or the gate knows of the request a call belongs to."""

    principal: Principal | None = None
    """None when authentication is off."""
    request_id: str = ""
    must_ask: frozenset[str] = frozenset()
    """Qualified names of tools the client wants to approve each call of, even where the
    policy allows them (a request can tighten the policy, never loosen it)."""

    @property
    def caller(self) -> str | None:
        return self.principal.name if self.principal is not None else None


ANONYMOUS = CallContext()
