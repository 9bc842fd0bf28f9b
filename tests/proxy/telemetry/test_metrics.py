"""Metrics: bounded model labels, source health at scrape time, the exposition format."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from proxy import parse_settings
from proxy.telemetry import Metrics, ModelLabels, Telemetry
from registry import SourceStatus
from tests.conftest import REPO


def _samples(text: bytes) -> dict[tuple[str, frozenset], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def test_only_configured_model_names_become_labels() -> None:
    labels = ModelLabels(["llama-3.1-8b", "qwen"])
    assert labels("qwen") == "qwen"
    assert labels("qwen-but-not-quite") == "other"
    assert labels("") == "-"


def test_globs_in_the_configuration_are_not_model_names() -> None:
    settings = parse_settings(
        {
            "upstreams": [
                {"name": "a", "base_url": "demo", "models": ["gpt-*", "exact", "[ab]c"]},
                {
                    "name": "b",
                    "base_url": "demo",
                    "models": ["*"],
                    "models_tool_calling": {"small": "emulated"},
                },
            ]
        },
        base_dir=REPO,
        environ={},
    )
    telemetry = Telemetry.from_settings(settings)
    assert telemetry.metrics is not None
    assert telemetry.metrics.model("exact") == "exact"
    assert telemetry.metrics.model("small") == "small"
    assert telemetry.metrics.model("gpt-4o") == "other"


def test_source_health_is_read_at_each_scrape() -> None:
    metrics = Metrics(ModelLabels([]))
    statuses = [SourceStatus("python:tools.py", True, 4), SourceStatus("mcp:time", False, 0, "x")]
    metrics.watch_sources(lambda: statuses)
    samples = _samples(metrics.exposition())
    assert samples[("toolwire_source_up", frozenset({("source", "mcp:time")}))] == 0
    assert samples[("toolwire_source_up", frozenset({("source", "python:tools.py")}))] == 1
    assert samples[("toolwire_source_tools", frozenset({("source", "python:tools.py")}))] == 4
    statuses[1] = SourceStatus("mcp:time", True, 2)
    samples = _samples(metrics.exposition())
    assert samples[("toolwire_source_up", frozenset({("source", "mcp:time")}))] == 1
    metrics.watch_sources(None)
    assert not any(name == "toolwire_source_up" for name, _ in _samples(metrics.exposition()))


def test_each_app_has_its_own_registry() -> None:
    one, two = Metrics(ModelLabels([])), Metrics(ModelLabels([]))
    one.requests("chat", "-", "-", "200").inc()
    assert (
        "toolwire_requests_total",
        frozenset({("front", "chat"), ("model", "-"), ("key", "-"), ("status", "200")}),
    ) not in _samples(two.exposition())


def test_counts_made_per_request_are_exact_in_every_scrape() -> None:
    metrics = Metrics(ModelLabels(["m"]))
    for seconds in (0.01, 0.07, 0.07, 400.0):
        metrics.request_seconds("chat").observe(seconds)
        metrics.requests("chat", "m", "-", "200").inc()
    metrics.tokens("m", "-", "input").inc(12)
    metrics.iterations.observe(1)
    first = _samples(metrics.exposition())
    chat = frozenset({("front", "chat")})
    bucket = "toolwire_request_duration_seconds_bucket"
    assert first[(bucket, chat | {("le", "0.05")})] == 1
    assert first[(bucket, chat | {("le", "0.1")})] == 3
    assert first[(bucket, chat | {("le", "300.0")})] == 3
    assert first[(bucket, chat | {("le", "+Inf")})] == 4
    assert first[("toolwire_request_duration_seconds_count", chat)] == 4
    assert abs(first[("toolwire_request_duration_seconds_sum", chat)] - 400.15) < 1e-9
    labels = frozenset({("front", "chat"), ("model", "m"), ("key", "-"), ("status", "200")})
    assert first[("toolwire_requests_total", labels)] == 4
    tokens = frozenset({("model", "m"), ("key", "-"), ("direction", "input")})
    assert first[("toolwire_tokens_total", tokens)] == 12
    assert first[("toolwire_loop_iterations_count", frozenset())] == 1
    # A second scrape shows the same values (nothing counted twice); new counts are added.
    assert _samples(metrics.exposition()) == first
    metrics.requests("chat", "m", "-", "200").inc()
    assert _samples(metrics.exposition())[("toolwire_requests_total", labels)] == 5
