"""The request context: what every layer may know about the request it serves."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass

from policies import CallContext, Principal

from .asgi import Replies, Scope
from .routing import UNROUTED, Route

REQUEST_ID_HEADER = "x-request-id"
_VALID_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
"""A client's request id is kept when it is this; any other is replaced (it reaches logs
and headers, so no spaces, quotes or control characters)."""


@dataclass(slots=True, init=False)
class RequestStats:
    """What one request came to, gathered by the layers it passed, read once at its end
    (the summary log line, the metrics, the trace). Made with every field at its start (a
    constructor without parameters: every request makes one); the layers set the rest."""

    started: float
    model: str
    """The model the client asked for, as sent (labels collapse unknown names)."""
    status: int
    streamed: bool
    disconnected: bool
    """The client went away before the whole answer was sent."""
    upstream_calls: int
    upstream_s: float
    """Time with an upstream call open."""
    tool_calls: int
    tool_s: float
    """Time with at least one tool running (parallel calls count once)."""
    tools_running: int
    tools_since: float
    input_tokens: int
    output_tokens: int
    stopped_by: str | None

    def __init__(self) -> None:
        self.started = _now()
        self.model = ""
        self.status = 0
        self.streamed = False
        self.disconnected = False
        self.upstream_calls = 0
        self.upstream_s = 0.0
        self.tool_calls = 0
        self.tool_s = 0.0
        self.tools_running = 0
        self.tools_since = 0.0
        self.input_tokens = 0
        self.output_tokens = 0
        self.stopped_by = None

    def overhead_s(self, now: float) -> float:
        """The proxy's own time so far: the request's, less upstream and tool time."""
        tools = self.tool_s + (now - self.tools_since if self.tools_running else 0.0)
        own = now - self.started - self.upstream_s - tools
        return own if own > 0.0 else 0.0  # not `max`: a builtin's call costs several times this


@dataclass(slots=True, init=False)
class RequestContext:
    """One HTTP request as the proxy sees it: its id, caller and headers.

    Built once at the edge and carried in the ASGI scope, so every layer of the edge (drain,
    metrics, logs, auth, the router) and the fronts read the same object. Made from its id
    and headers alone (every request makes one); the edge and auth set the rest.
    """

    request_id: str
    headers: Mapping[str, str]
    principal: Principal | None
    """The client key that authenticated the request; None without auth."""
    deadline: float | None
    """`time.monotonic()` by which the request must be answered, if bounded."""
    route: Route
    """The route table's row for its path (`server/routes.py`), found at the edge."""
    stats: RequestStats
    reply: Replies | None
    """How the front's own responses go out, with what the edge adds to them (its
    telemetry's `Served`, until the request ends); None without the edge (then as ASGI
    messages)."""

    def __init__(self, request_id: str, headers: Mapping[str, str]) -> None:
        self.request_id = request_id
        self.headers = headers
        self.principal = None
        self.deadline = None
        self.route = UNROUTED
        self.stats = RequestStats()
        self.reply = None

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


def new_context(scope: Scope, ids: RequestIds | None = None) -> RequestContext:
    """A new context for the request of `scope`, kept in it: the edge's, first thing for every
    HTTP request (a context looked for and not found would cost an exception). A new id is
    taken from `ids` when given (the edge's), else made."""
    headers = {}
    for name, value in scope["headers"]:  # a loop, not a comprehension: no frame of its own
        # A usual name is taken from the table (a lookup costs a fraction of a decode).
        headers[_name(name) or name.decode("latin-1")] = value.decode("latin-1")
    given = headers.get(REQUEST_ID_HEADER)
    if given is None:  # the usual case, spelled out: `request_id` is a call more
        if ids is None:
            made = _NEW_ID + _random_bits(64).to_bytes(8).hex()
        else:
            try:
                made = ids.take()
            except IndexError:  # taken them all: the next batch
                made = ids.more()
        context = RequestContext(made, headers)
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


class RequestIds:
    """New request ids, made a batch at a time (`more`) and taken one by one (`take`): one
    app's (the edge's). Each is an id as `request_id` makes it (64 random bits in 16 hex
    digits); in a batch, one big random number's hex digits, split, cost about half of
    making each alone. None is made before the first is wanted, so a process forked with the
    app makes its own (`random` reseeds in a fork's child)."""

    __slots__ = ("_made", "take")

    BATCH = 256

    def __init__(self) -> None:
        self._made: list[str] = []
        self.take = self._made.pop
        """The next id; raises IndexError when none is left (then `more`)."""

    def more(self) -> str:
        """A new batch made, and its first id taken."""
        digits = _random_bits(64 * self.BATCH).to_bytes(8 * self.BATCH).hex(" ", 8)
        self._made.extend((_NEW_ID + digits.replace(" ", " " + _NEW_ID)).split())
        return self.take()


# Ids only need to be unique, not secret: the fast generator keeps them cheap. An id is
# `req_` and 16 hex digits (64 random bits, big-endian: `req_%016x` of them, formatted for less).
_random_bits = random.getrandbits
_NEW_ID = "req_"
_set_current = current_request.set
_now = time.perf_counter
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
