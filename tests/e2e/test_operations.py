"""Operations through the real server: request ids, the overhead figure, /metrics after a
known sequence of turns, spans and traceparent, JSON logs (SIGTERM: test_shutdown.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from openai import AsyncOpenAI
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from prometheus_client.parser import text_string_to_metric_families

from proxy import create_app, parse_settings
from proxy.telemetry import OVERHEAD_HEADER, Telemetry, Tracing
from testing.asgi_serving import serve_app
from testing.upstream import FakeUpstream, Reply
from tests.conftest import REPO
from tests.e2e.served import log_lines, toolwire_serve
from tests.e2e.test_edge_limits import head_refused
from tests.e2e.tools import registry_with

USER = [{"role": "user", "content": "hi"}]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


@contextlib.asynccontextmanager
async def _serve(
    upstream: FakeUpstream, *, tracing: Tracing | None = None, **sections: Any
) -> AsyncIterator[str]:
    """The real app under uvicorn in front of the fake; yields its /v1 URL."""
    config = {
        "upstreams": [
            {"name": "fake", "base_url": upstream.base_url, "models": ["fake-model", "*"]}
        ],
        **sections,
    }
    settings = parse_settings(config, base_dir=REPO, environ={})
    app = create_app(
        settings,
        registry=registry_with(),
        telemetry=Telemetry.from_settings(settings, tracing=tracing),
    )
    async with serve_app(app) as root:
        yield f"{root}/v1"


def _client(base_url: str, key: str = "test-key") -> AsyncOpenAI:
    return AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=30)


async def _metrics(base_url: str, key: str | None = None) -> dict[tuple[str, frozenset], float]:
    """Every sample of /metrics by (name, labels)."""
    headers = {"authorization": f"Bearer {key}"} if key else {}
    root = base_url.removesuffix("/v1")
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{root}/metrics", headers=headers) as r,
    ):
        assert r.status == 200
        assert r.headers["content-type"].startswith("text/plain")
        text = await r.text()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _sample(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_request_id_kept_when_valid_and_replaced_when_not(upstream: FakeUpstream) -> None:
    async with _serve(upstream) as url:
        async with _client(url) as client:
            raw = await client.chat.completions.with_raw_response.create(
                model="fake-model", messages=USER, extra_headers={"X-Request-Id": "job-7.a:b_c"}
            )
            assert raw.headers["x-request-id"] == "job-7.a:b_c"
            for bad in ("has space", "x" * 129, 'quote"d', ""):
                raw = await client.chat.completions.with_raw_response.create(
                    model="fake-model", messages=USER, extra_headers={"X-Request-Id": bad}
                )
                assert raw.headers["x-request-id"].startswith("req_")
            models = await client.models.with_raw_response.list(
                extra_headers={"X-Request-Id": "models-1"}
            )
            assert models.headers["x-request-id"] == "models-1"
        async with aiohttp.ClientSession() as session:
            root = url.removesuffix("/v1")
            for path in ("/healthz", "/nowhere", "/metrics"):
                async with session.get(root + path, headers={"x-request-id": "probe-1"}) as r:
                    assert r.headers["x-request-id"] == "probe-1", path


async def test_overhead_figure_on_answers_and_streams(upstream: FakeUpstream) -> None:
    upstream.script(Reply.tool_calls([("t_add", {"a": 2, "b": 3})]), Reply.text("5"))
    async with _serve(upstream) as url, _client(url) as client:
        raw = await client.chat.completions.with_raw_response.create(
            model="fake-model", messages=USER
        )
        assert float(raw.headers[OVERHEAD_HEADER]) >= 0
        assert raw.parse().choices[0].message.content == "5"
        body = orjson.dumps({"model": "fake-model", "messages": USER, "stream": True})
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{url}/chat/completions", data=body) as response,
        ):
            assert OVERHEAD_HEADER not in response.headers
            events = [e for e in (await response.read()).split(b"\n\n") if e]
    assert events[-1] == b"data: [DONE]"
    name, _, value = events[-2].removeprefix(b": ").partition(b"=")
    assert name == OVERHEAD_HEADER.encode()
    assert float(value) >= 0


async def test_metrics_count_a_known_sequence(upstream: FakeUpstream) -> None:
    """A turn with a tool call, a turn with a denied call, an unknown model, a bad request."""
    upstream.script(
        Reply.tool_calls([("t_get_weather", {"city": "Oslo"})]),
        Reply.text("sunny"),
        Reply.tool_calls([("t_add", {"a": 1, "b": 2})]),
        Reply.text("I may not add"),
        Reply.text("hello"),
    )
    policy = {"rules": [{"match": {"name": "t.add"}, "action": "deny", "reason": "no sums"}]}
    async with _serve(upstream, policy=policy) as url, _client(url) as client:
        await client.chat.completions.create(model="fake-model", messages=USER)
        await client.chat.completions.create(model="fake-model", messages=USER)
        await client.chat.completions.create(model="someone-elses-model-name", messages=USER)
        with pytest.raises(Exception, match="400"):
            await client.chat.completions.create(model="fake-model", messages=[])
        samples = await _metrics(url)
    requests = "toolwire_requests_total"
    assert _sample(samples, requests, front="chat", model="fake-model", key="-", status="200") == 2
    assert _sample(samples, requests, front="chat", model="other", key="-", status="200") == 1
    assert _sample(samples, requests, front="chat", model="-", key="-", status="400") == 1
    calls = "toolwire_tool_calls_total"
    assert _sample(samples, calls, tool="t.get_weather", source="python", outcome="ok") == 1
    assert _sample(samples, calls, tool="t.add", source="python", outcome="denied") == 1
    assert (
        _sample(
            samples, "toolwire_tool_duration_seconds_count", tool="t.get_weather", source="python"
        )
        == 1
    )
    upstream_ok = "toolwire_upstream_calls_total"
    assert _sample(samples, upstream_ok, upstream="fake", model="fake-model", outcome="ok") == 4
    assert _sample(samples, upstream_ok, upstream="fake", model="other", outcome="ok") == 1
    tokens = "toolwire_tokens_total"
    assert _sample(samples, tokens, model="fake-model", key="-", direction="input") == 40
    assert _sample(samples, tokens, model="fake-model", key="-", direction="output") == 20
    assert _sample(samples, "toolwire_loop_iterations_count") == 3
    assert _sample(samples, "toolwire_loop_iterations_sum") == 5
    assert _sample(samples, "toolwire_open_streams") == 0
    labels = {label for name, found in samples for label, _ in found}
    assert labels <= {
        "front",
        "model",
        "key",
        "status",
        "upstream",
        "outcome",
        "tool",
        "source",
        "direction",
        "limit",
        "le",
    }


async def test_streams_guard_stops_and_approvals_are_counted(upstream: FakeUpstream) -> None:
    upstream.script(
        Reply.tool_calls([("t_add", {"a": 1, "b": 2})]),
        Reply.text("capped"),
        Reply.tool_calls([("t_get_weather", {"city": "Oslo"})]),
    )
    policy = {"rules": [{"match": {"name": "t.get_weather"}, "action": "ask"}]}
    async with (
        _serve(upstream, policy=policy, loop={"max_iterations": 1}) as url,
        _client(url) as client,
    ):
        stream = await client.chat.completions.create(
            model="fake-model", messages=USER, stream=True
        )
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        assert text == "capped"
        asked = await client.chat.completions.create(model="fake-model", messages=USER)
        assert asked.choices[0].finish_reason == "tool_calls"
        samples = await _metrics(url)
    assert _sample(samples, "toolwire_guard_stops_total", limit="max_iterations") == 1
    assert _sample(samples, "toolwire_approvals_total", outcome="asked") == 1
    assert _sample(samples, "toolwire_open_streams") == 0
    assert (
        _sample(
            samples,
            "toolwire_upstream_time_to_first_token_seconds_count",
            upstream="fake",
            model="fake-model",
        )
        == 2
    )


async def test_metrics_are_for_operators_keys_not_tenants(upstream: FakeUpstream) -> None:
    auth = {"master_key": "sk-master-0", "keys": [{"name": "team-a", "key": "sk-team-a"}]}
    admin = {"key": "sk-admin-00"}
    telemetry = {"metrics_key": "sk-scrape-0"}
    async with _serve(upstream, auth=auth, admin=admin, telemetry=telemetry) as url:
        root = url.removesuffix("/v1")
        async with _client(url, "sk-team-a") as client:
            await client.chat.completions.create(model="fake-model", messages=USER)
        async with aiohttp.ClientSession() as session:
            for key, status in ((None, 401), ("sk-nobody", 401), ("sk-team-a", 403)):
                headers = {"authorization": f"Bearer {key}"} if key else {}
                async with session.get(f"{root}/metrics", headers=headers) as r:
                    assert r.status == status, key
                    error = (await r.json())["error"]
                    assert "sk-" not in error["message"]
                    if status == 401:
                        assert r.headers["www-authenticate"] == "Bearer"
        for key in ("sk-master-0", "sk-admin-00"):
            await _metrics(url, key=key)
        samples = await _metrics(url, key="sk-scrape-0")
    assert (
        _sample(
            samples,
            "toolwire_requests_total",
            front="chat",
            model="fake-model",
            key="team-a",
            status="200",
        )
        == 1
    )
    refused = {"front": "metrics", "model": "-", "key": "-"}
    assert _sample(samples, "toolwire_requests_total", **refused, status="401") == 2
    assert _sample(samples, "toolwire_requests_total", **refused, status="403") == 1


async def test_a_metrics_key_is_needed_without_auth_too(upstream: FakeUpstream) -> None:
    async with (
        _serve(upstream, telemetry={"metrics_key": "sk-scrape-0"}) as url,
        aiohttp.ClientSession() as session,
    ):
        async with session.get(url.removesuffix("/v1") + "/metrics") as r:
            assert r.status == 401
        await _metrics(url, key="sk-scrape-0")


async def test_metrics_can_be_turned_off(upstream: FakeUpstream) -> None:
    async with (
        _serve(upstream, telemetry={"metrics": False}) as url,
        aiohttp.ClientSession() as session,
        session.get(url.removesuffix("/v1") + "/metrics") as r,
    ):
        assert r.status == 404


async def test_spans_of_a_two_round_turn_under_the_clients_trace(upstream: FakeUpstream) -> None:
    exporter = InMemorySpanExporter()
    upstream.script(Reply.tool_calls([("t_add", {"a": 2, "b": 3})]), Reply.text("5"))
    async with (
        _serve(upstream, tracing=Tracing.to_exporter(exporter)) as url,
        _client(url) as client,
    ):
        await client.chat.completions.create(
            model="fake-model", messages=USER, extra_headers={"traceparent": TRACEPARENT}
        )
    spans = exporter.get_finished_spans()
    (server,) = [s for s in spans if s.kind is SpanKind.SERVER]
    assert f"{server.context.trace_id:032x}" == TRACE_ID
    assert server.parent is not None and f"{server.parent.span_id:016x}" == "00f067aa0ba902b7"
    assert server.name == "POST /v1/chat/completions"
    assert server.attributes["http.response.status_code"] == 200
    assert server.attributes["gen_ai.request.model"] == "fake-model"
    assert server.attributes["gen_ai.usage.input_tokens"] == 20
    assert server.attributes["gen_ai.usage.output_tokens"] == 10
    children = [
        s for s in spans if s.parent is not None and s.parent.span_id == server.context.span_id
    ]
    chats = [s for s in children if s.attributes["gen_ai.operation.name"] == "chat"]
    tools = [s for s in children if s.attributes["gen_ai.operation.name"] == "execute_tool"]
    assert len(chats) == 2 and len(tools) == 1 and len(children) == 3
    assert all(s.kind is SpanKind.CLIENT for s in chats)
    assert chats[0].attributes["gen_ai.request.model"] == "fake-model"
    assert chats[0].attributes["gen_ai.usage.input_tokens"] == 10
    assert tools[0].attributes["gen_ai.tool.name"] == "t.add"
    assert tools[0].attributes["gen_ai.tool.call.id"]
    assert {s.context.trace_id for s in spans} == {server.context.trace_id}


async def test_traceparent_reaches_the_upstream(upstream: FakeUpstream) -> None:
    exporter = InMemorySpanExporter()
    async with (
        _serve(upstream, tracing=Tracing.to_exporter(exporter)) as url,
        _client(url) as client,
    ):
        await client.chat.completions.create(
            model="fake-model", messages=USER, extra_headers={"traceparent": TRACEPARENT}
        )
    (chat,) = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT]
    sent = upstream.headers[-1]["traceparent"]
    assert sent.startswith(f"00-{TRACE_ID}-{chat.context.span_id:016x}-")


@pytest.mark.parametrize("abandon", [False, True], ids=["completed", "abandoned"])
async def test_summary_line_reports_disconnects_only_when_the_client_left(
    upstream: FakeUpstream, caplog: pytest.LogCaptureFixture, abandon: bool
) -> None:
    caplog.set_level(logging.INFO, logger="toolwire.requests")
    # An abandoned turn's tool runs until the client has gone (a nap could end first on a
    # loaded machine, and the turn with it).
    call = ("t_slow", {"task": "forever"}) if abandon else ("t_nap", {"seconds": 0.15})
    upstream.script(Reply.tool_calls([call]), Reply.text("rested"))
    body = orjson.dumps({"model": "fake-model", "messages": USER, "stream": True})
    headers = {"content-type": "application/json"}
    async with _serve(upstream) as url, aiohttp.ClientSession() as session:
        async with session.post(f"{url}/chat/completions", data=body, headers=headers) as r:
            if abandon:
                await r.content.readuntil(b"tools running")
                r.close()
            else:
                await r.read()
                await asyncio.sleep(0.2)  # the connection stays open a while after the end
        async with asyncio.timeout(20):
            while not _summaries(caplog):  # noqa: ASYNC110 (a log record, no event to wait on)
                await asyncio.sleep(0.02)
    (line,) = _summaries(caplog)
    assert line.status == 200 and line.front == "chat" and line.streamed is True  # type: ignore[attr-defined]
    assert line.tool_calls == 1 and line.upstream_calls == (1 if abandon else 2)  # type: ignore[attr-defined]
    assert getattr(line, "disconnected", False) is abandon
    assert ("client disconnected" in line.getMessage()) is abandon


def _summaries(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == "toolwire.requests" and "/chat/completions" in r.getMessage()
    ]


async def test_json_logs_carry_the_request_id(tmp_path: Path, upstream: FakeUpstream) -> None:
    upstream.script(Reply.tool_calls([("demo_nap", {"seconds": 0.01})]), Reply.text("rested"))
    async with toolwire_serve(tmp_path, upstream) as (base, process):
        async with _client(f"{base}/v1") as client:
            await client.chat.completions.create(
                model="m", messages=USER, extra_headers={"X-Request-Id": "json-logs-1"}
            )
        assert await head_refused(base, 70_000) == 431  # `toolwire serve` bounds heads too
        process.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(process.wait, 20) == 0
    lines = log_lines(tmp_path)
    mine = [line for line in lines if line["request_id"] == "json-logs-1"]
    summary = [line for line in mine if line["logger"] == "toolwire.requests"]
    assert len(summary) == 1
    assert {"time", "level", "logger", "message"} <= set(summary[0])
    assert summary[0]["status"] == 200 and summary[0]["tool_calls"] == 1
    assert summary[0]["upstream_calls"] == 2 and summary[0]["tokens_in"] == 20
    assert any(line["logger"] == "uvicorn.error" for line in lines)


async def test_a_programs_inner_calls_are_spans_under_its_run(upstream: FakeUpstream) -> None:
    exporter = InMemorySpanExporter()
    code = "import asyncio\nprint(await asyncio.gather(t_add(a=1, b=2), t_add(a=3, b=4)))"
    upstream.script(Reply.tool_calls([("run_code", {"code": code})]), Reply.text("3 and 7"))
    async with (
        _serve(upstream, tracing=Tracing.to_exporter(exporter), code_mode={"enabled": True}) as url,
        _client(url) as client,
    ):
        await client.chat.completions.create(model="fake-model", messages=USER)
    spans = exporter.get_finished_spans()
    (server,) = [s for s in spans if s.kind is SpanKind.SERVER]
    (run,) = [s for s in spans if s.name == "execute_tool run_code"]
    inner = [s for s in spans if s.name == "execute_tool t.add"]
    assert run.parent is not None and run.parent.span_id == server.context.span_id
    assert len(inner) == 2
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in inner)
    run_id = run.attributes["gen_ai.tool.call.id"]
    assert sorted(s.attributes["gen_ai.tool.call.id"] for s in inner) == [
        f"{run_id}.1",
        f"{run_id}.2",
    ]
