"""The telemetry's part of the edge: every HTTP request's id on its response, its summary
log line, its metrics and its span (`Telemetry.serve`); and the `Telemetry` an app keeps for
them."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Iterable
from logging import DEBUG, INFO
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from registry import trace_headers

from ..config import Settings
from ..server.asgi import CYCLE, JSON_FIELDS, Receive, Scope, Send, send_fields
from ..server.context import (
    REQUEST_ID_HEADER,
    RequestContext,
    RequestIds,
    RequestStats,
    context_of,
)
from .drain import Drain
from .logs import NO_REQUEST, log_summary, requests_log
from .metered import LoopMeter, MeteredUpstream
from .metrics import CONTENT_TYPE, Metrics, ModelLabels
from .scrapes import ScrapeKeys
from .tool_calls import ToolCallListener
from .tracing import Tracing

if TYPE_CHECKING:
    from ..server.services import Services

Message = dict[str, Any]
OVERHEAD_HEADER = "x-toolwire-overhead-ms"
_OVERHEAD = OVERHEAD_HEADER.encode()
_DONE = b"data: [DONE]\n\n"
_REQUEST_ID = REQUEST_ID_HEADER.encode()
_EVENT_STREAM = (b"content-type", b"text/event-stream; charset=utf-8")
_JSON = (b"content-type", b"application/json")
"""The content types the fronts answer turns with (`server/asgi.py`)."""
_OVERHEAD_FIELD = _OVERHEAD + b": %.2f\r\n"
_STREAM_FIELDS = (
    b"content-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n"
    b"x-accel-buffering: no\r\nx-request-id: %b\r\n"
)
"""An event stream's own header lines (`asgi.start_stream`'s), before the request id's."""
DISCONNECTED = 499
"""The status counted for a request whose client left before any answer (as nginx does)."""


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
        self.ids = RequestIds()
        """New request ids, for the edge's contexts."""

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
        """The services with their loop's turns and upstream calls measured; their sources'
        health on /metrics."""
        if self.metrics is not None:
            self.metrics.watch_sources(services.sources.statuses)
            pins = services.pins
            if pins is not None:
                self.metrics.watch_pins(lambda: ((v.source, v.status) for v in pins.views()))
        metrics, tracing = self.metrics, self.tracing
        services.upstreams.instrument(lambda upstream: MeteredUpstream(upstream, metrics, tracing))
        services.loop.meter = LoopMeter()
        return services

    def close(self) -> None:
        """Stop reading the sources; send the last spans."""
        if self.metrics is not None:
            self.metrics.fold()  # with several workers, the last counts reach the files
            self.metrics.watch_sources(None)
            self.metrics.watch_pins(None)
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

    def account(self, scope: Scope) -> None:
        """Count and log a request the edge answered before its telemetry began
        (the drain's refusals)."""
        context = context_of(scope)
        now = time.perf_counter()
        if self.metrics is not None:
            _count(self.metrics, context, now)
        log_summary(context, scope["method"], scope["path"], now)

    def serve(
        self,
        context: RequestContext,
        scope: Scope,
        receive: Receive,
        send: Send,
        drain: Drain | None = None,
    ) -> Served:
        """One HTTP request begun (`context`, its route found), its span opened: `receive`
        and `send` as the rest of the edge uses them (`Served`); `Served.end` accounts for
        it, and leaves the `drain` when it is given (the request was counted there)."""
        route = context.route
        method: str = scope["method"]
        turn = route.turn and method == "POST"
        served = Served(receive, send, context, turn, self.metrics, scope, drain)
        context.reply = served
        tracing = self.tracing
        if tracing is not None:
            span, token = tracing.start_request(
                method, scope["path"], route.template, context.headers
            )
            served.trace = (tracing, span, token, trace_headers.set(tracing.current_headers))
        return served


class Served:
    """One HTTP request as it is served: its `receive` and `send`, watched. The response gets
    the request id (and, on a turn, the proxy's overhead); a disconnect before the answer's
    end is noted; at the end (`end`), the summary line, the metrics and the span.

    `send` is no coroutine of its own but hands back the server's awaitable: every message
    of an answer (each event of a stream) passes it, and a frame less on each is measurable
    (bench/instructions.py). Its callers await it at once, as any ASGI `send`. When the
    server tells of the client's departure (`told`: `asgi.CYCLE` in the scope), the
    end asks it, and the server's own `receive` needs no watching.
    """

    __slots__ = (
        "_complete",
        "_context",
        "_cycle",
        "_drain",
        "_metrics",
        "_receive",
        "_scope",
        "_send",
        "_turn",
        "told",
        "trace",
    )

    def __init__(
        self,
        receive: Receive,
        send: Send,
        context: RequestContext,
        turn: bool,
        metrics: Metrics | None,
        scope: Scope,
        drain: Drain | None = None,
    ) -> None:
        self._receive = receive
        self._send = send
        self._context = context
        self._turn = turn
        self._metrics = metrics
        self._scope = scope
        self._drain = drain
        self._cycle = cycle = scope.get(CYCLE)
        self.told = cycle is not None
        """Whether the server tells of the client's departure (the end asks it)."""
        self._complete = False
        self.trace: tuple[Tracing, Any, Any, Any] | None = None
        """With tracing on: the tracing, the request's span, its context token, and the
        token of the trace headers it set."""

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.disconnect" and not self._complete:
            self._context.stats.disconnected = True
        return message

    def send(self, message: Message) -> Awaitable[None]:
        if message["type"] != "http.response.start":
            if not message.get("more_body", False):
                self._complete = True
                if self._context.stats.streamed:
                    message = self._last(message)
            return self._send(message)
        # The response start, with the request id (unless the route set it) and, on a turn's
        # unstreamed answer, the proxy's overhead (the answer is complete by now): here, not
        # in a method of its own, a call less per answer.
        context = self._context
        stats = context.stats
        stats.status = message["status"]
        headers = [*(message.get("headers") or ())]  # a copy, without a call
        # The fronts' own headers are found where they put them (the request id last) or
        # whole, by one comparison each; others by a scan.
        if not (headers and headers[-1][0] == _REQUEST_ID) and not any(
            name == _REQUEST_ID for name, _ in headers
        ):
            headers.append((_REQUEST_ID, context.request_id.encode()))
        if self._turn:
            if _JSON not in headers and (
                _EVENT_STREAM in headers
                or any(
                    name == b"content-type" and value.startswith(b"text/event-stream")
                    for name, value in headers
                )
            ):
                stats.streamed = True
                if self._metrics is not None:
                    self._metrics.open_streams.inc()
            else:  # (`_overhead_ms`, spelled out: a call less per answer)
                overhead = stats.overhead_s(time.perf_counter()) * 1000
                headers.append((_OVERHEAD, b"%.2f" % overhead))
        return self._send({**message, "headers": headers})

    def answer(self, status: int, body: bytes) -> Awaitable[None]:
        """A JSON response sent whole (`asgi.Replies`): what `send` makes of its two messages,
        the request id and (on a turn) the overhead with them, written by the server's
        protocol at once when it can (`Cycle.answer`), else sent as those messages."""
        context = self._context
        stats = context.stats
        stats.status = status
        self._complete = True
        fields = JSON_FIELDS % (len(body), context.request_id.encode())
        if self._turn:  # (`_overhead_ms`, spelled out: a call less per answer)
            fields += _OVERHEAD_FIELD % (stats.overhead_s(time.perf_counter()) * 1000)
        cycle = self._cycle
        if cycle is not None:
            return cycle.answer(status, fields, body)
        return send_fields(self._send, status, fields, body)

    def open_stream(self, body: bytes, more: bool = True) -> Awaitable[None]:
        """An event stream begun with its first frames (`asgi.Replies`): what `send` makes of
        its start and first body (the request id; on a turn, the stream noted and counted
        open, and the overhead in its last body), written at once when the server's protocol
        can (`Cycle.open_stream`), else sent as those messages."""
        context = self._context
        stats = context.stats
        stats.status = 200
        if self._turn:
            stats.streamed = True
            if self._metrics is not None:
                self._metrics.open_streams.inc()
        if not more:
            self._complete = True
            if stats.streamed:
                body = self._last_body(body)
        fields = _STREAM_FIELDS % context.request_id.encode()
        cycle = self._cycle
        if cycle is not None:
            return cycle.open_stream(200, fields, body, more)
        return send_fields(self._send, 200, fields, body, more)

    def chunk(self, body: bytes, more: bool = True) -> Awaitable[None]:
        """The stream's next frames (`asgi.Replies`), as `send` sends a body."""
        if not more:
            self._complete = True
            if self._context.stats.streamed:
                body = self._last_body(body)
        cycle = self._cycle
        if cycle is not None:
            return cycle.chunk(body, more)
        return self._send({"type": "http.response.body", "body": body, "more_body": more})

    def end(self) -> None:
        """The request is over: its status settled, its metrics, span and summary line; the
        drain left, last (its last request may stop the server)."""
        try:
            now = time.perf_counter()
            context = self._context
            # Its `reply` (this `Served`, which holds it): the reference cycle broken, so the
            # request's objects are freed now, not by the cyclic collector.
            context.reply = None
            stats = context.stats
            cycle = self._cycle
            if cycle is not None and cycle.disconnected:
                stats.disconnected = True  # the client left before the answer was complete
            if not stats.status:
                stats.status = DISCONNECTED if stats.disconnected else 500
            metrics = self._metrics
            if metrics is not None:
                if stats.streamed:
                    metrics.open_streams.dec()
                principal = context.principal
                key = principal.name if principal is not None else NO_REQUEST
                metrics.count_request(context.route.label, key, stats, now)
            if self.trace is not None:
                tracing, span, token, traced = self.trace
                trace_headers.reset(traced)
                tracing.end_request(span, token, stats.status, _span_attributes(context))
            if requests_log.isEnabledFor(DEBUG if context.route.quiet else INFO):
                scope = self._scope  # (the line's own check, spelled out: a call less when off)
                log_summary(context, scope["method"], scope["path"], now)
        finally:
            if self._drain is not None:
                self._drain.leave()

    def _last(self, message: Message) -> Message:
        """A stream's last body message with the overhead (`_last_body`)."""
        return {**message, "body": self._last_body(message.get("body", b""))}

    def _last_body(self, body: bytes) -> bytes:
        """A stream's last body with the overhead as an SSE comment (which every client's
        parser skips): before Chat's closing `[DONE]`, else after the last event."""
        comment = b": " + _OVERHEAD + b"=" + _overhead_ms(self._context.stats)
        if body.endswith(_DONE):
            return body[: -len(_DONE)] + comment + b"\n\n" + _DONE
        return body + comment + b"\n\n"


def _overhead_ms(stats: RequestStats) -> bytes:
    return b"%.2f" % (stats.overhead_s(time.perf_counter()) * 1000)


def _count(metrics: Metrics, context: RequestContext, now: float) -> None:
    """The request's counters: one update each, at its end."""
    principal = context.principal
    key = principal.name if principal is not None else NO_REQUEST
    metrics.count_request(context.route.label, key, context.stats, now)


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


def _configured_models(settings: Settings) -> Iterable[str]:
    """Model names the configuration spells out (no globs): the only ones used as labels."""
    for upstream in settings.upstreams:
        for model in (*upstream.models, *upstream.models_tool_calling):
            if not any(ch in model for ch in "*?["):
                yield model
