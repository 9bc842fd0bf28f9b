"""The request context: what every layer may know about the request it serves."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field

from policies import CallContext, Principal

from .asgi import Scope
from .routing import UNROUTED, Route

REQUEST_ID_HEADER = "x-request-id"
_VALID_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
"""A client's request id is kept when it is this; any other is replaced (it reaches logs
and headers, so no spaces, quotes or control characters)."""


@dataclass(slots=True)
class RequestStats:
    """What one request came to, gathered by the layers it passed, read once at its end
    (the summary log line, the metrics, the trace)."""

    started: float = field(default_factory=time.perf_counter)
    model: str = ""
    """The model the client asked for, as sent (labels collapse unknown names)."""
    status: int = 0
    streamed: bool = False
    disconnected: bool = False
    """The client went away before the whole answer was sent."""
    upstream_calls: int = 0
    upstream_s: float = 0.0
    """Time with an upstream call open."""
    tool_calls: int = 0
    tool_s: float = 0.0
    """Time with at least one tool running (parallel calls count once)."""
    tools_running: int = 0
    tools_since: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    stopped_by: str | None = None

    def overhead_s(self, now: float) -> float:
        """The proxy's own time so far: the request's, less upstream and tool time."""
        tools = self.tool_s + (now - self.tools_since if self.tools_running else 0.0)
        own = now - self.started - self.upstream_s - tools
        return own if own > 0.0 else 0.0  # not `max`: a builtin's call costs several times this


@dataclass(slots=True)
class RequestContext:
    """One HTTP request as the proxy sees it: its id, caller and headers.

    Built once at the edge and carried in the ASGI scope, so every layer of the edge (drain,
    metrics, logs, auth, the router) and the fronts read the same object.
    """

    request_id: str
    headers: Mapping[str, str]
    principal: Principal | None = None
    """The client key that authenticated the request; None without auth."""
    deadline: float | None = None
    """`time.monotonic()` by which the request must be answered, if bounded."""
    route: Route = UNROUTED
    """The route table's row for its path (`server/routes.py`), found at the edge."""
    stats: RequestStats = field(default_factory=RequestStats)

    def caller(self, must_ask: frozenset[str] = frozenset()) -> CallContext:
        """What the gate knows of this request."""
        return CallContext(self.principal, self.request_id, must_ask, self.headers)


current_request: ContextVar[RequestContext | None] = ContextVar("toolwire_request", default=None)
"""The request being served, for log lines written far from the front (registry, MCP)."""

SCOPE_KEY = "toolwire.context"


def context_of(scope: Scope) -> RequestContext:
    """The request's context, created on first use and kept in the scope.

    Its id is the client's `X-Request-Id` when that is 1-128 characters of
    `[A-Za-z0-9._:-]`, else a new one.
    """
    try:  # the edge made it (`new_context`): one subscript for every layer after it
        return scope[SCOPE_KEY]  # type: ignore[no-any-return]
    except KeyError:
        return new_context(scope)


def new_context(scope: Scope) -> RequestContext:
    """A new context for the request of `scope`, kept in it: the edge's, first thing for every
    HTTP request (a context looked for and not found would cost an exception)."""
    headers = {}
    for name, value in scope["headers"]:  # a loop, not a comprehension: no frame of its own
        # A usual name is taken from the table (a lookup costs a fraction of a decode).
        headers[_name(name) or name.decode("latin-1")] = value.decode("latin-1")
    given = headers.get(REQUEST_ID_HEADER)
    if given is None:  # the usual case, spelled out: `request_id` is a call more
        context = RequestContext(_NEW_ID + _random_bits(64).to_bytes(8).hex(), headers)
    else:
        context = RequestContext(request_id(given), headers)
    scope[SCOPE_KEY] = context
    _set_current(context)
    return context


def request_id(given: str | None) -> str:
    """`given` when it is a valid request id, else a new one."""
    if given is not None and _VALID_ID.fullmatch(given):
        return given
    return _NEW_ID + _random_bits(64).to_bytes(8).hex()


# Ids only need to be unique, not secret: the fast generator keeps them cheap. An id is
# `req_` and 16 hex digits (64 random bits, big-endian: `req_%016x` of them, formatted for less).
_random_bits = random.getrandbits
_NEW_ID = "req_"
_set_current = current_request.set
_USUAL_NAMES = (
    "accept",
    "accept-encoding",
    "accept-language",
    "anthropic-beta",
    "anthropic-version",
    "authorization",
    "baggage",
    "cache-control",
    "connection",
    "content-length",
    "content-type",
    "cookie",
    "expect",
    "forwarded",
    "host",
    "last-event-id",
    "mcp-protocol-version",
    "mcp-session-id",
    "openai-beta",
    "openai-organization",
    "openai-project",
    "origin",
    "referer",
    "traceparent",
    "tracestate",
    "transfer-encoding",
    "user-agent",
    "x-api-key",
    "x-forwarded-for",
    "x-forwarded-proto",
    "x-goog-api-key",
    "x-real-ip",
    REQUEST_ID_HEADER,
    "x-stainless-arch",
    "x-stainless-async",
    "x-stainless-helper-method",
    "x-stainless-lang",
    "x-stainless-os",
    "x-stainless-package-version",
    "x-stainless-read-timeout",
    "x-stainless-retry-count",
    "x-stainless-runtime",
    "x-stainless-runtime-version",
    "x-stainless-timeout",
    "x-toolwire-exclude-tags",
    "x-toolwire-namespaces",
    "x-toolwire-tags",
)
"""Header names most requests carry (as the server gives them: lowercase): HTTP's own, the
OpenAI and Anthropic SDKs', tracing's, Toolwire's."""
_name = {name.encode("latin-1"): name for name in _USUAL_NAMES}.get
"""A usual header name's `str`, by its bytes; None for any other (decoded then)."""
