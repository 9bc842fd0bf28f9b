"""The context every check receives: who is calling, in which request, asking what."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from registry import Caller, without_client_key

from .principals import Principal


@dataclass(slots=True, unsafe_hash=True)
class CallContext:
    """What a policy, a guard or the gate knows of the request a call belongs to.

    Not changed once made, though not frozen: one is made per request, and a frozen
    dataclass sets each field through `object.__setattr__` (about four times the cost).
    It compares and hashes as a frozen one would (its fields but `headers`)."""

    principal: Principal | None = None
    """None when authentication is off."""
    request_id: str = ""
    must_ask: frozenset[str] = frozenset()
    """Qualified names of tools the client wants to approve each call of, even where the
    policy allows them (a request can tighten the policy, never loosen it)."""
    headers: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType({}), repr=False, compare=False, hash=False
    )
    """The client request's headers (a source acting for its caller may forward one)."""

    @property
    def caller(self) -> str | None:
        return self.principal.name if self.principal is not None else None

    def acting(self) -> Caller:
        """Who the calls of this context run for, as sources acting for the caller see it."""
        principal = self.principal
        if principal is None:
            return Caller(None, headers=self.headers)
        # With client keys on, the key the client presented never reaches a source or tool.
        headers = without_client_key(self.headers)
        return Caller(principal.name, principal.credentials, headers)


ANONYMOUS = CallContext()
