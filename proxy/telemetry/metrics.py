"""Prometheus metrics: what the proxy counts, with bounded labels, and their exposition.

Every label value comes from the configuration or the registry (fronts, configured model
names, key names, upstream names, registered tools and their sources, error kinds), never
from a client's free text: a model name the configuration does not list is `other`.

With several worker processes (`toolwire serve --workers N`) prometheus-client keeps the
values in files under `PROMETHEUS_MULTIPROC_DIR` and a scrape of any worker reads them
all; `toolwire serve` sets that up.

What every request counts goes into tallies (`tallies.py`) and reaches these metrics when they
are folded: at a scrape, and with several workers soon after the first count.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from registry import SourceStatus

from .tallies import Children, CounterTally, GaugeTally, HistogramTally, Tallied, Tallies

if TYPE_CHECKING:
    from ..server.context import RequestStats

OTHER = "other"
NONE = "-"
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST

_LATENCY = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
_FIRST_TOKEN = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_TOOL = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_OVERHEAD = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
_ITERATIONS = (1, 2, 3, 4, 5, 6, 8, 10, 16, 32)


class ModelLabels:
    """Model names as labels: the configured ones as they are, any other as `other`."""

    def __init__(self, known: Iterable[str]) -> None:
        self.known = frozenset(known)
        """The configured names (`Metrics` spells this call out where every request pays it)."""

    def __call__(self, model: str) -> str:
        if not model:
            return NONE
        return model if model in self.known else OTHER


class Metrics:
    """The proxy's metrics in a registry of their own (one per app, none global)."""

    def __init__(self, models: ModelLabels) -> None:
        self.model = models
        self.registry = CollectorRegistry(auto_describe=True)
        self._multiprocess = bool(os.environ.get(MULTIPROC_ENV))
        tallies = self._tallies = Tallies(self._multiprocess)
        self._requests: dict[tuple[str, str, str, int], _RequestTallies] = {}
        """Each (front, model, key, status)'s tallies (`count_request`)."""
        self._upstream_calls: dict[
            tuple[str, str, str], tuple[CounterTally, HistogramTally, HistogramTally]
        ] = {}
        """Each (upstream, model, outcome)'s tallies (`count_upstream_call`)."""
        self._sources: Callable[[], Sequence[SourceStatus]] | None = None
        self._pins: Callable[[], Iterable[tuple[str, str]]] | None = None
        r = self.registry
        self.requests = Tallied(
            Counter(
                "toolwire_requests",
                "HTTP requests answered, by front, model, client key and status.",
                ["front", "model", "key", "status"],
                registry=r,
            ),
            tallies,
        )
        self.request_seconds = Tallied(
            Histogram(
                "toolwire_request_duration_seconds",
                "Whole requests, first byte in to last byte out.",
                ["front"],
                buckets=_LATENCY,
                registry=r,
            ),
            tallies,
        )
        self.overhead_seconds = Tallied(
            Histogram(
                "toolwire_overhead_seconds",
                "The proxy's own time per request: its duration less upstream and tool time.",
                ["front"],
                buckets=_OVERHEAD,
                registry=r,
            ),
            tallies,
        )
        self.upstream_calls = Tallied(
            Counter(
                "toolwire_upstream_calls",
                "Calls to upstream model servers, by outcome (ok, error, cancelled).",
                ["upstream", "model", "outcome"],
                registry=r,
            ),
            tallies,
        )
        self.upstream_seconds = Tallied(
            Histogram(
                "toolwire_upstream_duration_seconds",
                "Upstream calls, from sending the request to the answer's end.",
                ["upstream", "model"],
                buckets=_LATENCY,
                registry=r,
            ),
            tallies,
        )
        self.first_token_seconds = Tallied(
            Histogram(
                "toolwire_upstream_time_to_first_token_seconds",
                "Streamed upstream calls: from sending the request to the first chunk.",
                ["upstream", "model"],
                buckets=_FIRST_TOKEN,
                registry=r,
            ),
            tallies,
        )
        self.tokens = Tallied(
            Counter(
                "toolwire_tokens",
                "Tokens the upstreams reported, summed per turn: input (prompt) and output.",
                ["model", "key", "direction"],
                registry=r,
            ),
            tallies,
        )
        self.tool_calls = Children(
            Counter(
                "toolwire_tool_calls",
                "Tool calls by outcome: ok, an error kind (tool_error, timeout, "
                "invalid_arguments, ...), or a gate refusal (denied, refused).",
                ["tool", "source", "outcome"],
                registry=r,
            )
        )
        self.tool_seconds = Children(
            Histogram(
                "toolwire_tool_duration_seconds",
                "Tool calls that ran, arguments checked to result.",
                ["tool", "source"],
                buckets=_TOOL,
                registry=r,
            )
        )
        self.iterations = HistogramTally(
            Histogram(
                "toolwire_loop_iterations",
                "Upstream calls per turn.",
                buckets=_ITERATIONS,
                registry=r,
            ),
            tallies,
        )
        self.guard_stops = Tallied(
            Counter(
                "toolwire_guard_stops",
                "Turns a loop guard ended, by the limit that did.",
                ["limit"],
                registry=r,
            ),
            tallies,
        )
        self.approvals = Children(
            Counter(
                "toolwire_approvals",
                "Calls the policy asked approval for (asked) and approved calls run (approved).",
                ["outcome"],
                registry=r,
            )
        )
        self.mcp_requests = Children(
            Counter(
                "toolwire_mcp_client_requests",
                "Requests MCP servers made of Toolwire during calls, by source, kind "
                "(elicitation, sampling) and outcome (accept, decline, cancel; served, refused).",
                ["source", "kind", "outcome"],
                registry=r,
            )
        )
        self.open_streams = GaugeTally(
            Gauge(
                "toolwire_open_streams",
                "Event streams being sent now.",
                registry=r,
                multiprocess_mode="livesum",
            ),
            tallies,
        )

    def watch_sources(self, statuses: Callable[[], Sequence[SourceStatus]] | None) -> None:
        """Report these sources' health at each scrape (None: stop)."""
        self._sources = statuses

    def watch_pins(self, pins: Callable[[], Iterable[tuple[str, str]]] | None) -> None:
        """Report the pinned tools' (source, status) pairs at each scrape (None: stop)."""
        self._pins = pins

    def count_request(self, front: str, key: str, stats: RequestStats, now: float) -> None:
        """One request's counters at its end (`now`), found by one lookup: its count and
        duration; for a request that ran a turn (its model set), the proxy's overhead, the
        turn's upstream calls, its tokens and the guard that stopped it."""
        model = stats.model
        label = (model if model in self.model.known else OTHER) if model else NONE
        status = stats.status
        tallies = self._requests.get((front, label, key, status))
        if tallies is None:
            tallies = self._request_tallies(front, label, key, status)
        requests, duration, overhead, tokens_in, tokens_out = tallies
        seconds = now - stats.started
        # Each tally's own inc and observe, spelled out: every request pays this.
        requests.pending += 1
        duration.counts[bisect_left(duration.bounds, seconds)] += 1
        duration.total += seconds
        if not self._tallies.armed:
            self._tallies.arm()
        if not model:
            return
        # `stats.overhead_s(now)`, spelled out: a call less on every turn.
        tools = stats.tool_s + (now - stats.tools_since if stats.tools_running else 0.0)
        overhead_s = seconds - stats.upstream_s - tools
        if not overhead_s > 0.0:
            overhead_s = 0.0
        # The usual overhead (under half a millisecond) and the usual turn (one upstream call)
        # fall in the first bucket: found by one comparison, without bisect's call.
        bounds = overhead.bounds
        overhead.counts[0 if overhead_s <= bounds[0] else bisect_left(bounds, overhead_s)] += 1
        overhead.total += overhead_s
        calls = stats.upstream_calls
        if calls:
            iterations = self.iterations
            bounds = iterations.bounds
            iterations.counts[0 if calls <= bounds[0] else bisect_left(bounds, calls)] += 1
            iterations.total += calls
        if stats.input_tokens:
            tokens_in.pending += stats.input_tokens
        if stats.output_tokens:
            tokens_out.pending += stats.output_tokens
        if stats.stopped_by is not None:
            self.guard_stops(stats.stopped_by).inc()

    def count_upstream_call(
        self,
        upstream: str,
        model: str,
        outcome: str,
        seconds: float,
        first_token_s: float | None = None,
    ) -> None:
        """One upstream call's counters at its end, found by one lookup (`model` as sent;
        `first_token_s`: a streamed call's time to its first chunk)."""
        label = (model if model in self.model.known else OTHER) if model else NONE
        tallies = self._upstream_calls.get((upstream, label, outcome))
        if tallies is None:
            tallies = self._upstream_calls[(upstream, label, outcome)] = (
                self.upstream_calls(upstream, label, outcome),
                self.upstream_seconds(upstream, label),
                self.first_token_seconds(upstream, label),
            )
        calls, duration, first_token = tallies
        # The tallies' own inc and observe, spelled out (as in `count_request`).
        calls.pending += 1
        duration.counts[bisect_left(duration.bounds, seconds)] += 1
        duration.total += seconds
        if first_token_s is not None:
            first_token.counts[bisect_left(first_token.bounds, first_token_s)] += 1
            first_token.total += first_token_s
        if not self._tallies.armed:
            self._tallies.arm()

    def _request_tallies(self, front: str, model: str, key: str, status: int) -> _RequestTallies:
        found = self._requests[(front, model, key, status)] = (
            self.requests(front, model, key, str(status)),
            self.request_seconds(front),
            self.overhead_seconds(front),
            self.tokens(model, key, "input"),
            self.tokens(model, key, "output"),
        )
        return found

    def fold(self) -> None:
        """Put what the requests counted since the last fold into the metrics (a scrape, and
        the app's end, do it first; with several workers, every `FOLD_S` too)."""
        self._tallies.fold()

    def exposition(self) -> bytes:
        """The text a scrape gets: every worker's values with several workers."""
        self._tallies.fold()
        if self._multiprocess:
            registry = CollectorRegistry(auto_describe=True)
            MultiProcessCollector(registry)
        else:
            registry = self.registry
        text = generate_latest(registry)
        if self._sources is not None:
            scratch = CollectorRegistry(auto_describe=False)
            scratch.register(_SourceHealth(self._sources))
            if self._pins is not None:
                scratch.register(_PinnedTools(self._pins))
            text += generate_latest(scratch)
        return text


_RequestTallies = tuple[
    "CounterTally", "HistogramTally", "HistogramTally", "CounterTally", "CounterTally"
]
"""A request's counter, duration, overhead, input and output tokens (`count_request`)."""


class _PinnedTools(Collector):
    """This process's tools of pinning sources by status (`changed` under `warn` is a drift
    served), read at scrape time."""

    def __init__(self, pins: Callable[[], Iterable[tuple[str, str]]]) -> None:
        self._pins = pins

    def collect(self) -> Iterator[GaugeMetricFamily]:
        counts: dict[tuple[str, str], int] = {}
        for key in self._pins():
            counts[key] = counts.get(key, 0) + 1
        family = GaugeMetricFamily(
            "toolwire_pinned_tools",
            "Tools of pinning sources by status: pinned, changed, new, rejected.",
            labels=["source", "status"],
        )
        for (source, status), count in sorted(counts.items()):
            family.add_metric([source, status], float(count))
        yield family


class _SourceHealth(Collector):
    """This process's tool sources as gauges, read at scrape time."""

    def __init__(self, statuses: Callable[[], Sequence[SourceStatus]]) -> None:
        self._statuses = statuses

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily(
            "toolwire_source_up", "1 when the tool source loaded without error.", labels=["source"]
        )
        tools = GaugeMetricFamily(
            "toolwire_source_tools", "Tools the source registered.", labels=["source"]
        )
        for status in self._statuses():
            up.add_metric([status.name], 1.0 if status.reachable and not status.error else 0.0)
            tools.add_metric([status.name], float(status.tool_count))
        yield up
        yield tools
