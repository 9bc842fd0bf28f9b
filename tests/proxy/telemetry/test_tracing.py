"""Spans and trace propagation in memory: the upstream wrapper, the tool listener, and no
OpenTelemetry at all when tracing is off."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Any

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from proxy.server.context import RequestContext, current_request
from proxy.telemetry import Tracing
from proxy.telemetry.metered import MeteredUpstream
from proxy.telemetry.tool_calls import ToolCallListener
from registry import CallEvent, ToolCall, ToolRegistry, ToolResult
from tests.conftest import REPO


class _Upstream:
    """Answers two chunks and keeps the headers each call was given."""

    name = "fake"

    def __init__(self) -> None:
        self.headers: list[Mapping[str, str] | None] = []

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        async def chunks() -> AsyncIterator[dict[str, Any]]:
            yield {"choices": [{"delta": {"content": "hi"}}]}
            yield {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}

        yield chunks()

    def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: Any = None,
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        self.headers.append(headers)
        return self._open()

    async def list_models(self) -> list[str]:
        return []

    async def aclose(self) -> None:
        pass


async def test_an_upstream_call_is_a_client_span_named_in_its_traceparent() -> None:
    exporter = InMemorySpanExporter()
    tracing = Tracing.to_exporter(exporter)
    inner = _Upstream()
    upstream = MeteredUpstream(inner, None, tracing)
    context = RequestContext("req-1", {})
    token = current_request.set(context)
    try:
        span, restore = tracing.start_request("POST", "/v1/chat/completions", None, {})
        body = {"model": "m", "stream": True}
        async with upstream.complete(body, headers={"authorization": "Bearer k"}) as chunks:
            got = [chunk async for chunk in chunks]
        tracing.end_request(span, restore, 200, {})
    finally:
        current_request.reset(token)
    assert len(got) == 2
    server, chat = sorted(exporter.get_finished_spans(), key=lambda s: s.kind is SpanKind.CLIENT)
    assert chat.kind is SpanKind.CLIENT and chat.parent.span_id == server.context.span_id
    assert chat.attributes["gen_ai.usage.input_tokens"] == 7
    assert chat.attributes["gen_ai.usage.output_tokens"] == 3
    sent = inner.headers[0]
    assert sent["authorization"] == "Bearer k"
    trace_id, span_id = f"{chat.context.trace_id:032x}", f"{chat.context.span_id:016x}"
    assert sent["traceparent"].startswith(f"00-{trace_id}-{span_id}-")
    assert context.stats.upstream_calls == 1 and context.stats.upstream_s > 0


async def test_without_tracing_the_headers_pass_unchanged() -> None:
    inner = _Upstream()
    headers = {"authorization": "Bearer k"}
    async with MeteredUpstream(inner, None, None).complete({"model": "m"}, headers=headers) as c:
        [chunk async for chunk in c]
    assert inner.headers == [headers]


def test_tool_calls_are_spans_current_while_they_run() -> None:
    exporter = InMemorySpanExporter()
    listener = ToolCallListener(None, Tracing.to_exporter(exporter))
    registry = ToolRegistry()

    def fail() -> None:
        """Fail."""

    tool = registry.register(fail, namespace="t")
    event = CallEvent(tool, ToolCall("call_1", "t_fail", "{}"), "req-1")
    listener.before_call(event)
    from opentelemetry import trace

    running = trace.get_current_span()
    listener.after_call(event, ToolResult.error("call_1", "timeout", "too slow"))
    assert trace.get_current_span() is not running
    (span,) = exporter.get_finished_spans()
    assert span.context.span_id == running.get_span_context().span_id
    assert span.attributes["gen_ai.tool.name"] == "t.fail"
    assert span.attributes["gen_ai.tool.call.id"] == "call_1"
    assert span.attributes["error.type"] == "timeout"
    assert span.status.status_code is StatusCode.ERROR


def test_opentelemetry_is_not_imported_when_tracing_is_off() -> None:
    """The SDK's tracing and the exporter, that is: the MCP SDK loads the API itself."""
    script = (
        "import sys\n"
        "from proxy import create_app, parse_settings\n"
        "settings = parse_settings({'upstreams': [{'name': 'd', 'base_url': 'demo'}]},"
        " base_dir='.', environ={})\n"
        "create_app(settings)\n"
        "print(sorted(m for m in sys.modules if m.startswith(("
        "'opentelemetry.sdk.trace', 'opentelemetry.exporter'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
