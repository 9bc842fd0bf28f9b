"""The request context: what every layer may know about the request it serves."""

from __future__ import annotations

import random
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass

from policies import CallContext, Principal

from .asgi import Scope


@dataclass(slots=True)
class RequestContext:
    """One HTTP request as the proxy sees it: its id, caller and headers.

    Built once at the edge and carried in the ASGI scope, so middleware (auth, metrics,
    logs) and the fronts read the same object.
    """

    request_id: str
    headers: Mapping[str, str]
    principal: Principal | None = None
    """The client key that authenticated the request; None without auth."""
    deadline: float | None = None
    """`time.monotonic()` by which the request must be answered, if bounded."""

    def caller(self, must_ask: frozenset[str] = frozenset()) -> CallContext:
        """What the gate knows of this request."""
        return CallContext(self.principal, self.request_id, must_ask)


current_request: ContextVar[RequestContext | None] = ContextVar("toolwire_request", default=None)
"""The request being served, for log lines written far from the front (registry, MCP)."""

SCOPE_KEY = "toolwire.context"


def context_of(scope: Scope) -> RequestContext:
    """The request's context, created on first use and kept in the scope."""
    found = scope.get(SCOPE_KEY)
    if found is not None:
        return found  # type: ignore[no-any-return]
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
    # Ids only need to be unique, not secret: the fast generator keeps them cheap.
    context = RequestContext(f"req_{random.getrandbits(64):016x}", headers)
    scope[SCOPE_KEY] = context
    current_request.set(context)
    return context
