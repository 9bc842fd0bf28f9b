"""Trace context for the requests tools send: W3C `traceparent` and `tracestate`.

The registry knows nothing of tracing. Whoever traces sets `trace_headers` to a function
that returns the headers naming the span current when it is called (the tool call's); the
OpenAPI source adds them to each operation's request, the MCP source to each `tools/call`
(in the request's `_meta`, and as HTTP headers on Streamable HTTP and SSE). Unset, which is
the default, nothing is called and nothing is added.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar

__all__ = ["TRACE_HEADER_NAMES", "HeaderProvider", "outgoing_trace_headers", "trace_headers"]

HeaderProvider = Callable[[], Mapping[str, str]]
TRACE_HEADER_NAMES = ("traceparent", "tracestate")

trace_headers: ContextVar[HeaderProvider | None] = ContextVar(
    "toolwire_trace_headers", default=None
)
"""The provider for the current request; tasks and threads started under it inherit it."""


def outgoing_trace_headers() -> Mapping[str, str]:
    """The trace headers for a request sent now; empty when nothing traces."""
    provider = trace_headers.get()
    return provider() if provider is not None else {}
