"""The edge every HTTP request passes: its id on the response, its summary log line, its
metrics and its span; and the drain, which counts running work and refuses new requests
while the server shuts down."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from registry import trace_headers

from ..config import Settings
from ..errors import ProxyError
from ..fronts.messages import error_body
from ..server.asgi import Receive, Scope, Send, send_json
from ..server.context import REQUEST_ID_HEADER, RequestContext, RequestStats, context_of
from .drain import Drain
from .logs import NO_REQUEST, log_summary
from .metrics import CONTENT_TYPE, Metrics, ModelLabels
from .scrapes import ScrapeKeys
from .tool_calls import ToolCallListener
from .tracing import Tracing
from .turns import MeteredLoop, MeteredUpstream

if TYPE_CHECKING:
    from ..server.services import Services
    from ..turn.loop import ToolLoop

Message = dict[str, Any]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
OVERHEAD_HEADER = "x-toolwire-overhead-ms"
_DONE = b"data: [DONE]\n\n"
DISCONNECTED = 499
"""The status counted for a request whose client left before any answer (as nginx does)."""

_TURNS = {"/v1/chat/completions": "chat", "/v1/responses": "responses", "/v1/messages": "messages"}
"""The fronts' paths, where a POST runs a turn."""
_ROUTES = {
    **_TURNS,
    "/v1/models": "models",
    "/healthz": "healthz",
    "/readyz": "readyz",
    "/metrics": "metrics",
}
_SERVED_WHILE_DRAINING = frozenset({"healthz", "metrics"})
"""Liveness and scrapes still answer while the server drains; everything else gets 503."""
_PREFIXES = (
    ("/v1/responses/", "responses", "/v1/responses/{response_id}"),
    ("/v1/messages/", "messages", None),
    ("/admin", "admin", None),
    ("/mcp", "mcp", None),
)


class Telemetry:
    """Request ids, summary logs, metrics and traces for one app; its drain state."""

    def __init__(
        self,
        metrics: Metrics | None = None,
        tracing: Tracing | None = None,
        scrapes: ScrapeKeys | None = None,
    ) -> None:
        self.metrics = metrics
        self.tracing = tracing
        self._scrapes = scrapes
        self.listener = ToolCallListener(metrics, tracing)
        """The executor's listener for tool calls and permission decisions."""
        self.drain = Drain()
        """Shutdown's first phase: running work goes on, new requests get 503."""

    @classmethod
    def from_settings(cls, settings: Settings, *, tracing: Tracing | None = None) -> Telemetry:
        """As `telemetry:` says; `tracing` replaces the configured exporter (tests).

        Raises:
            ConfigError: traces are configured but OpenTelemetry is not installed.
        """
        config = settings.telemetry
        metrics = Metrics(ModelLabels(_configured_models(settings))) if config.metrics else None
        if tracing is None and config.otlp_endpoint:
            tracing = Tracing.to_collector(config.otlp_endpoint, config.service_name)
        return cls(metrics, tracing, ScrapeKeys.from_settings(settings))

    def instrument(self, services: Services) -> Services:
        """The services with their loop measured; their sources' health on /metrics."""
        if self.metrics is not None:
            self.metrics.watch_sources(services.sources.statuses)
        metrics, tracing = self.metrics, self.tracing
        services.upstreams.instrument(lambda upstream: MeteredUpstream(upstream, metrics, tracing))
        loop = MeteredLoop(services.loop)
        # `Services.loop` names the concrete class; the wrapper has its one method, `run`.
        return dataclasses.replace(services, loop=cast("ToolLoop", loop))

    def close(self) -> None:
        """Stop reading the sources; send the last spans."""
        if self.metrics is not None:
            self.metrics.watch_sources(None)
        if self.tracing is not None:
            self.tracing.shutdown()

    async def metrics_endpoint(self, request: Request) -> Response:
        """`GET /metrics`: the Prometheus text format, for operators' keys.

        Raises:
            ProxyError: 401 without an operator's key, 403 with a client key.
        """
        if self.metrics is None:
            return JSONResponse({"error": {"message": "metrics are off"}}, status_code=404)
        if self._scrapes is not None:
            self._scrapes.check(request.headers)
        return Response(self.metrics.exposition(), media_type=CONTENT_TYPE)

    async def serve(self, scope: Scope, receive: Receive, send: Send, app: App) -> None:
        """Run `app` for one HTTP request, and account for it."""
        context = context_of(scope)
        stats = context.stats
        path: str = scope["path"]
        front, route = _route(path)
        stats.front = front
        turn = scope["method"] == "POST" and path in _TURNS
        drain = self.drain
        if drain.draining and front not in _SERVED_WHILE_DRAINING:
            await _refuse_while_draining(send, context, front)
            now = time.perf_counter()
            if self.metrics is not None:
                _count(self.metrics, context, now)
            log_summary(context, scope["method"], path, now)
            return
        waited = drain.waits_for(scope["method"])
        if waited:
            drain.enter()
        try:
            await self._serve(scope, receive, send, app, route, turn)
        finally:
            if waited:
                drain.leave()  # last: the drain's last request may stop the server

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, app: App, route: str | None, turn: bool
    ) -> None:
        context = context_of(scope)
        stats = context.stats
        path: str = scope["path"]
        span = token = traced = None
        if self.tracing is not None:
            span, token = self.tracing.start_request(scope["method"], path, route, context.headers)
            traced = trace_headers.set(self.tracing.current_headers)
        metrics = self.metrics
        exchange = _Exchange(receive, send, context, turn, metrics)
        try:
            await app(scope, exchange.receive, exchange.send)
        finally:
            now = time.perf_counter()
            if not stats.status:
                stats.status = DISCONNECTED if stats.disconnected else 500
            if metrics is not None:
                if stats.streamed:
                    metrics.open_streams.dec()
                _count(metrics, context, now)
            if traced is not None:
                trace_headers.reset(traced)
            if span is not None and self.tracing is not None:
                self.tracing.end_request(span, token, stats.status, _span_attributes(context))
            log_summary(context, scope["method"], path, now)


class _Exchange:
    """One request's `receive` and `send`, watched: the response gets the request id and
    the overhead; a disconnect before the answer's end is noted."""

    __slots__ = ("_complete", "_context", "_metrics", "_receive", "_send", "_turn")

    def __init__(
        self,
        receive: Receive,
        send: Send,
        context: RequestContext,
        turn: bool,
        metrics: Metrics | None,
    ) -> None:
        self._receive = receive
        self._send = send
        self._context = context
        self._turn = turn
        self._metrics = metrics
        self._complete = False

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.disconnect" and not self._complete:
            self._context.stats.disconnected = True
        return message

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            message = self._start(message)
        elif not message.get("more_body", False):
            self._complete = True
            if self._context.stats.streamed:
                message = self._last(message)
        await self._send(message)

    def _start(self, message: Message) -> Message:
        """The response start with the request id (unless the route set it) and, on a
        turn's unstreamed answer, the proxy's overhead (the answer is complete by now)."""
        stats = self._context.stats
        stats.status = message["status"]
        headers = list(message.get("headers") or ())
        if not any(name == b"x-request-id" for name, _ in headers):
            headers.append((REQUEST_ID_HEADER.encode(), self._context.request_id.encode()))
        if self._turn:
            if any(
                name == b"content-type" and value.startswith(b"text/event-stream")
                for name, value in headers
            ):
                stats.streamed = True
                if self._metrics is not None:
                    self._metrics.open_streams.inc()
            else:
                headers.append((OVERHEAD_HEADER.encode(), _overhead_ms(stats)))
        return {**message, "headers": headers}

    def _last(self, message: Message) -> Message:
        """A stream's last body with the overhead as an SSE comment (which every client's
        parser skips): before Chat's closing `[DONE]`, else after the last event."""
        comment = b": " + OVERHEAD_HEADER.encode() + b"=" + _overhead_ms(self._context.stats)
        body: bytes = message.get("body", b"")
        if body.endswith(_DONE):
            body = body[: -len(_DONE)] + comment + b"\n\n" + _DONE
        else:
            body += comment + b"\n\n"
        return {**message, "body": body}


def _overhead_ms(stats: RequestStats) -> bytes:
    return f"{stats.overhead_s(time.perf_counter()) * 1000:.2f}".encode()


def _count(metrics: Metrics, context: RequestContext, now: float) -> None:
    """The request's counters: one update each, at its end."""
    stats = context.stats
    model = metrics.model(stats.model)
    key = context.principal.name if context.principal is not None else NO_REQUEST
    metrics.requests(stats.front, model, key, str(stats.status)).inc()
    metrics.request_seconds(stats.front).observe(now - stats.started)
    if not stats.model:
        return
    metrics.overhead_seconds(stats.front).observe(stats.overhead_s(now))
    if stats.upstream_calls:
        metrics.iterations.observe(stats.upstream_calls)
    if stats.input_tokens:
        metrics.tokens(model, key, "input").inc(stats.input_tokens)
    if stats.output_tokens:
        metrics.tokens(model, key, "output").inc(stats.output_tokens)
    if stats.stopped_by is not None:
        metrics.guard_stops(stats.stopped_by).inc()


def _span_attributes(context: RequestContext) -> dict[str, Any]:
    stats = context.stats
    attributes: dict[str, Any] = {"toolwire.request_id": context.request_id}
    if context.principal is not None:
        attributes["toolwire.key"] = context.principal.name
    if stats.model:
        attributes.update(
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": stats.model,
                "gen_ai.usage.input_tokens": stats.input_tokens,
                "gen_ai.usage.output_tokens": stats.output_tokens,
                "toolwire.upstream_calls": stats.upstream_calls,
                "toolwire.tool_calls": stats.tool_calls,
            }
        )
    if stats.stopped_by is not None:
        attributes["toolwire.stopped_by"] = stats.stopped_by
    if stats.disconnected:
        attributes["toolwire.client_disconnected"] = True
    return attributes


async def _refuse_while_draining(send: Send, context: RequestContext, front: str) -> None:
    """503 in the front's shape; the connection closed, so the client's next attempt finds
    another replica (or this one gone)."""
    headers = {REQUEST_ID_HEADER: context.request_id, "connection": "close"}
    context.stats.status = 503
    if front == "readyz":
        await send_json(send, 503, {"status": "draining"}, headers)
        return
    error = ProxyError("the proxy is shutting down", status=503, code="shutting_down")
    body = error_body(error) if front == "messages" else error.body()
    await send_json(send, 503, body, headers)


def _route(path: str) -> tuple[str, str | None]:
    """The front (a bounded label) and the route template (for the span) of a path."""
    front = _ROUTES.get(path)
    if front is not None:
        return front, path
    for prefix, name, template in _PREFIXES:
        if path.startswith(prefix):
            return name, template
    return "other", None


def _configured_models(settings: Settings) -> Iterable[str]:
    """Model names the configuration spells out (no globs): the only ones used as labels."""
    for upstream in settings.upstreams:
        for model in (*upstream.models, *upstream.models_tool_calling):
            if not any(ch in model for ch in "*?["):
                yield model
