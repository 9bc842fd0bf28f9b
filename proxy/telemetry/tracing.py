"""OpenTelemetry traces: a SERVER span per request, a child per upstream call and per tool
call, with the GenAI semantic conventions' attributes (`gen_ai.*`).

OpenTelemetry is imported only here, and only when tracing is configured
(`telemetry.otlp_endpoint`, the `toolwire[otel]` extra): with tracing off the proxy never
loads it and pays nothing. A client's W3C `traceparent` makes the request's span a child of
the client's; the upstream request carries the upstream call's span on, and the requests
tools send (OpenAPI operations, MCP calls) the tool call's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..config import ConfigError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span

Attributes = dict[str, Any]
_PROPAGATED = ("traceparent", "tracestate")


class Tracing:
    """Starts and ends the proxy's spans on one tracer provider."""

    def __init__(self, provider: TracerProvider) -> None:
        from opentelemetry import context, trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self._provider = provider
        self._tracer = provider.get_tracer("toolwire")
        self._trace = trace
        self._context = context
        self._propagator = TraceContextTextMapPropagator()

    @classmethod
    def to_collector(cls, endpoint: str, service_name: str) -> Tracing:
        """Spans batched to an OTLP/HTTP collector (`endpoint`: its base URL).

        Raises:
            ConfigError: the `toolwire[otel]` extra is not installed.
        """
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            raise ConfigError(
                "telemetry.otlp_endpoint: needs OpenTelemetry (pip install 'toolwire[otel]')"
            ) from exc
        url = endpoint if endpoint.endswith("/v1/traces") else f"{endpoint}/v1/traces"
        provider = _provider(service_name)
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
        return cls(provider)

    @classmethod
    def to_exporter(cls, exporter: SpanExporter, service_name: str = "toolwire") -> Tracing:
        """Spans handed to `exporter` as each ends (tests: the SDK's in-memory exporter)."""
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor

        provider = _provider(service_name)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        return cls(provider)

    def shutdown(self) -> None:
        """Send what is left and stop the exporter."""
        self._provider.shutdown()

    def start_request(
        self, method: str, path: str, route: str | None, headers: Mapping[str, str]
    ) -> tuple[Span, object]:
        """The request's SERVER span, made current; a client's `traceparent` is its parent.

        Returns the span and the token `end_request` needs to restore the context.
        """
        parent = self._propagator.extract(headers) if "traceparent" in headers else None
        attributes: Attributes = {"http.request.method": method, "url.path": path}
        if route is not None:
            attributes["http.route"] = route
        span = self._tracer.start_span(
            f"{method} {route or path}", parent, self._trace.SpanKind.SERVER, attributes
        )
        token = self._context.attach(self._trace.set_span_in_context(span))
        return span, token

    def end_request(self, span: Span, token: object, status: int, attributes: Attributes) -> None:
        """Close the request's span with its outcome; restore the context."""
        span.set_attribute("http.response.status_code", status)
        span.set_attributes(attributes)
        if status >= 500:
            span.set_status(self._trace.StatusCode.ERROR)
            span.set_attribute("error.type", str(status))
        self._context.detach(token)  # type: ignore[arg-type]
        span.end()

    def start_upstream(
        self, upstream: str, model: str, headers: Mapping[str, str] | None
    ) -> tuple[Span, dict[str, str]]:
        """A CLIENT span for one upstream call, and the headers to send it with (the given
        ones, and `traceparent` naming this span)."""
        attributes: Attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "toolwire.upstream": upstream,
        }
        kind = self._trace.SpanKind.CLIENT
        span = self._tracer.start_span(f"chat {model}", None, kind, attributes)
        sent = {k: v for k, v in (headers or {}).items() if k not in _PROPAGATED}
        self._propagator.inject(sent, self._trace.set_span_in_context(span))
        return span, sent

    def current_headers(self) -> dict[str, str]:
        """`traceparent` (and `tracestate`) naming the current span: for the requests tools
        send (the registry's `trace_headers` provider)."""
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier)
        return carrier

    def end_upstream(self, span: Span, attributes: Attributes, error: str | None) -> None:
        span.set_attributes(attributes)
        if error is not None:
            span.set_status(self._trace.StatusCode.ERROR)
            span.set_attribute("error.type", error)
        span.end()

    def start_tool(self, tool: str, call_id: str) -> tuple[Span, object]:
        """An INTERNAL span for one tool call, made current while the tool runs (so clients
        it uses that OpenTelemetry instruments carry it on)."""
        attributes: Attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
        }
        span = self._tracer.start_span(f"execute_tool {tool}", attributes=attributes)
        token = self._context.attach(self._trace.set_span_in_context(span))
        return span, token

    def end_tool(self, span: Span, token: object, error_kind: str | None) -> None:
        if error_kind is not None:
            span.set_status(self._trace.StatusCode.ERROR)
            span.set_attribute("error.type", error_kind)
        self._context.detach(token)  # type: ignore[arg-type]
        span.end()


def _provider(service_name: str) -> TracerProvider:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    return TracerProvider(resource=Resource.create({"service.name": service_name}))
