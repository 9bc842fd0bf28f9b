"""A 10,000-tool catalog: start-up, memory, tool selection, `tool_search`, injected bytes.

    .venv/bin/python bench/catalog.py                      # figures + PASS/MISS goal lines
    .venv/bin/python bench/catalog.py --json out.json      # the same, and every number as JSON
    .venv/bin/python bench/catalog.py --tools 2000 --visible 20 --profile

What is measured
----------------
`--tools` Python functions are generated (realistic names such as `github.list_pull_requests`,
Google-style docstrings, 1-5 typed parameters, about 50 namespaces, each tool tagged with
its domain and read_only / write / destructive) and registered in one `ToolRegistry`;
`--visible` of them, picked at random, are injected and all others are `defer=True`. The
policy is a `RulePolicy` asking approval for destructive tools (so every tool stays visible).

* start-up   the time to register every tool, and the process RSS (VmRSS from
             /proc/self/status) before and after; then the first `Catalog.toolset`, which
             builds the search index. `--tracemalloc` also traces registration (much slower).
* selection  `Catalog.toolset(filter)`, what each request calls: for `--filters` distinct
             filters never seen before (namespaces, tags, excluded tags), for the whole
             catalog with a new Catalog (what every filter pays after a registry change), and
             for a cached filter (every later request).
* search     `run_search(toolset, call, loaded)`, what the loop runs for a `tool_search`
             call, over `--queries` task-like queries on the whole catalog; and the hit rate
             of 50 queries made of 4 words of a random deferred tool's description (the tool
             is in the top 5).
* bytes      the JSON of the tools on the first upstream call (the visible schemas and the
             `tool_search` schema, as the loop sends them) against every tool's schema.

Timings are wall-clock p50 / p99, followed by the thread's CPU time `(CPU p50 / p99)`:
on a shared machine the wall time includes waiting for a core, so the load average is
printed too. Goals, on wall time: selection < 1 ms, `tool_search` p99 < 5 ms,
injected bytes < 2 % of the full list; exit status 1 when one is missed. `--profile` adds
where the time goes (cProfile, by own time) for fresh selections and for searches. A
default run spends most of its time in registration and `tool_search`.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from policies import NO_FILTER, Gate, Policy, PolicyConfig, RulePolicy
from proxy.turn.catalog import SEARCH_CHAT_TOOL, Catalog, Toolset
from proxy.turn.search import run_search
from registry import Executor, ToolCall, ToolRegistry

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.catalog_tools import (
    NAMESPACES,
    generate,
    quality_queries,
    random_filter,
    realistic_queries,
)


def make_catalog(registry: ToolRegistry, policy: Policy) -> Catalog:
    """The one place the bench builds a Catalog (its constructor may gain parameters)."""
    return Catalog(registry, Gate(policy, Executor(max_workers=1)))


def make_policy() -> Policy:
    return RulePolicy(
        PolicyConfig.model_validate(
            {"rules": [{"match": {"tags": ["destructive"]}, "action": "ask"}]}
        )
    )


def rss_kib() -> dict[str, int]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def percentiles(samples: list[tuple[int, int]]) -> dict[str, float]:
    """p50 / p99 / max of (wall, thread CPU) nanosecond samples, in ms."""
    out: dict[str, float] = {"n": len(samples)}
    for prefix, column in (("", 0), ("cpu_", 1)):
        ms = sorted(sample[column] / 1e6 for sample in samples)
        out[f"{prefix}p50_ms"] = statistics.median(ms)
        out[f"{prefix}p99_ms"] = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
        out[f"{prefix}max_ms"] = ms[-1]
    return out


def load_average() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def search_call(query: str, limit: int, n: int) -> ToolCall:
    return ToolCall(
        f"call_{n}", "tool_search", orjson.dumps({"query": query, "limit": limit}).decode()
    )


def time_each(items: list[Any], fn: Callable[[Any], object]) -> list[tuple[int, int]]:
    """Wall and thread-CPU time of `fn(item)` for each item: on a shared machine the CPU
    time shows the cost without the time the process waited for a core."""
    samples = []
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    for item in items:
        start, start_cpu = wall(), cpu()
        fn(item)
        samples.append((wall() - start, cpu() - start_cpu))
    return samples


def profile_lines(title: str, fn: Callable[[], object], top: int = 12) -> list[str]:
    profiler = cProfile.Profile()
    profiler.runcall(fn)
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream)
    stats.strip_dirs().sort_stats("tottime").print_stats(top)
    body = [line for line in stream.getvalue().splitlines() if line.strip()]
    start = next(i for i, line in enumerate(body) if "ncalls" in line)
    return [f"--- profile: {title} (by own time) ---", *body[start:]]


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    result: dict[str, Any] = {"tools": args.tools, "visible": args.visible}
    result["machine"] = {"cpus": os.cpu_count(), "load_average_start": load_average()}
    registry = _start_up(args, result)
    policy = make_policy()
    catalog = make_catalog(registry, policy)
    started = time.perf_counter()
    toolset = catalog.toolset(NO_FILTER)
    result["first_toolset_s"] = time.perf_counter() - started
    result["memory_kib"]["first_toolset"] = rss_kib()
    deferred = len(toolset.deferred) if toolset.deferred is not None else 0
    result["counts"] = {"injected": len(toolset.specs), "deferred": deferred}

    tracemalloc.start()
    make_catalog(registry, policy).toolset(NO_FILTER)
    result["toolset_traced_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    gc.collect()

    _selection(args, rng, registry, policy, catalog, result)
    calls = _search(args, rng, toolset, result)
    first_call = [*toolset.chat_tools]
    if toolset.deferred is not None:
        first_call.append(SEARCH_CHAT_TOOL)
    everything = [registry.openai_schema(t) for t in registry.list_tools()]
    injected, full = len(orjson.dumps(first_call)), len(orjson.dumps(everything))
    result["bytes"] = {"injected": injected, "full": full, "ratio_pct": 100 * injected / full}
    if args.profile:
        result["profiles"] = _profiles(args, registry, policy, toolset, calls)
    result["machine"]["load_average_end"] = load_average()
    return result


def _start_up(args: argparse.Namespace, result: dict[str, Any]) -> ToolRegistry:
    """Generate and register the tools, timing each step and reading the RSS after it."""
    memory = {"start": rss_kib()}
    started = time.perf_counter()
    generated = generate(args.tools, args.seed)
    result["generate_s"] = time.perf_counter() - started
    memory["generated"] = rss_kib()

    shown = set(random.Random(args.seed).sample(range(args.tools), args.visible))
    registry = ToolRegistry()
    if args.tracemalloc:
        tracemalloc.start()
    started = time.perf_counter()
    for i, (ns, fn, tag) in enumerate(generated):
        domain = NAMESPACES[ns][1]
        registry.register(fn, namespace=ns, tags={domain, tag}, defer=i not in shown)
    result["register_s"] = time.perf_counter() - started
    if args.tracemalloc:
        result["register_traced_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    memory["registered"] = rss_kib()
    result["memory_kib"] = memory
    return registry


def _selection(
    args: argparse.Namespace,
    rng: random.Random,
    registry: ToolRegistry,
    policy: Policy,
    catalog: Catalog,
    result: dict[str, Any],
) -> None:
    """`Catalog.toolset` for fresh filters, for the whole catalog cold, and cached."""
    filters = list(dict.fromkeys(random_filter(rng) for _ in range(args.filters * 2)))
    filters = filters[: args.filters]
    fresh = make_catalog(registry, policy)
    result["select_fresh"] = percentiles(time_each(filters, fresh.toolset))
    cold = [make_catalog(registry, policy) for _ in range(args.cold)]
    result["select_full_cold"] = percentiles(time_each(cold, lambda c: c.toolset(NO_FILTER)))
    cached = [NO_FILTER] * 5000
    result["select_cached"] = percentiles(time_each(cached, catalog.toolset))


def _search(
    args: argparse.Namespace, rng: random.Random, toolset: Toolset, result: dict[str, Any]
) -> list[ToolCall]:
    """`tool_search` over task-like queries, and its hit rate on description words."""
    queries = realistic_queries(args.queries, rng)
    calls = [search_call(q, limit, n) for n, (q, limit) in enumerate(queries)]
    for call in calls[:20]:
        run_search(toolset, call, {})
    answers: list[str] = []
    timed = time_each(calls, lambda c: answers.append(run_search(toolset, c, {}).content))
    result["search"] = percentiles(timed)
    found = [len(orjson.loads(answer)["tools"]) for answer in answers]
    result["search_mean_found"] = statistics.mean(found)

    hits = 0
    probes = quality_queries(toolset, 50, rng)
    misses = []
    for n, (query, wire) in enumerate(probes):
        loaded: dict[str, dict[str, Any]] = {}
        run_search(toolset, search_call(query, 5, n), loaded)
        hits += wire in loaded
        if wire not in loaded:
            misses.append(f"{query!r} -> {wire}")
    result["quality"] = {"hit_rate": hits / max(1, len(probes)), "misses": misses[:5]}
    return calls


def _profiles(
    args: argparse.Namespace,
    registry: ToolRegistry,
    policy: Policy,
    toolset: Toolset,
    calls: list[ToolCall],
) -> list[str]:
    # Under cProfile everything runs several times slower: profile a sample.
    other = random.Random(args.seed + 1)
    more = [random_filter(other) for _ in range(20)]
    profiled = make_catalog(registry, policy)
    return [
        *profile_lines(
            f"toolset, {len(more)} fresh filters",
            lambda: [profiled.toolset(f) for f in more],
        ),
        *profile_lines(
            f"run_search, {len(calls[:30])} queries",
            lambda: [run_search(toolset, c, {}) for c in calls[:30]],
        ),
    ]


def timing(stats: dict[str, float], scale: float = 1.0, unit: str = "ms") -> str:
    """`p50 / p99 (CPU p50 / p99)`; `scale` converts from ms."""
    wall = f"p50 {scale * stats['p50_ms']:.2f} {unit}, p99 {scale * stats['p99_ms']:.2f} {unit}"
    return f"{wall} (CPU {scale * stats['cpu_p50_ms']:.2f} / {scale * stats['cpu_p99_ms']:.2f})"


def report(result: dict[str, Any]) -> tuple[list[str], bool]:
    n, counts, machine = result["tools"], result["counts"], result["machine"]
    mem = result["memory_kib"]
    mib = {k: v["VmRSS"] / 1024 for k, v in mem.items()}
    fresh, cold, cached = (result[k] for k in ("select_fresh", "select_full_cold", "select_cached"))
    search, bytes_, quality = result["search"], result["bytes"], result["quality"]
    traced = result.get("register_traced_peak_mib")
    lines = [
        f"machine: {machine['cpus']} CPUs, load average {machine['load_average_start']:.1f} "
        f"at start, {machine['load_average_end']:.1f} at the end",
        f"catalog: {n:,} tools, {counts['injected']} injected, {counts['deferred']:,} deferred",
        f"start-up: generate functions {result['generate_s']:.2f} s, register {n:,} tools "
        f"{result['register_s']:.2f} s ({1e6 * result['register_s'] / n:.0f} us/tool), "
        f"first toolset (builds the index) {1e3 * result['first_toolset_s']:.0f} ms",
        f"memory (RSS): {mib['start']:.0f} MiB at start, {mib['generated']:.0f} after "
        f"generating, {mib['registered']:.0f} after registering "
        f"(+{mib['registered'] - mib['generated']:.0f} MiB, "
        f"{1024 * (mib['registered'] - mib['generated']) / n:.1f} KiB/tool), "
        f"{mib['first_toolset']:.0f} after the first toolset; "
        f"peak {mem['first_toolset']['VmHWM'] / 1024:.0f} MiB",
        f"tracemalloc peak of one full toolset build: {result['toolset_traced_peak_mib']:.1f} MiB"
        + (f"; of registration: {traced:.0f} MiB" if traced is not None else ""),
        f"selection, fresh filter ({fresh['n']} distinct): {timing(fresh)}",
        f"selection, whole catalog in a new Catalog ({cold['n']}x): {timing(cold)}",
        f"selection, cached filter ({cached['n']}x): {timing(cached, 1e3, 'us')}",
        f"tool_search over {counts['deferred']:,} deferred tools ({search['n']} queries, "
        f"{result['search_mean_found']:.1f} found on average): {timing(search)}, "
        f"max {search['max_ms']:.2f} ms",
        f"search quality: {100 * quality['hit_rate']:.0f} % of 50 description-word queries "
        "find their tool in the top 5",
        *(f"    miss: {m}" for m in quality["misses"]),
        f"injected on the first call: {bytes_['injected']:,} bytes vs {bytes_['full']:,} for "
        f"every tool = {bytes_['ratio_pct']:.2f} %",
    ]
    goals = [
        (cached["p99_ms"] < 1, f"selection, cached filter p99 {cached['p99_ms']:.3f} ms (< 1 ms)"),
        (fresh["p99_ms"] < 1, f"selection, fresh filter p99 {fresh['p99_ms']:.2f} ms (< 1 ms)"),
        (search["p99_ms"] < 5, f"tool_search p99 {search['p99_ms']:.2f} ms (< 5 ms)"),
        (bytes_["ratio_pct"] < 2, f"injected bytes {bytes_['ratio_pct']:.2f} % of all (< 2 %)"),
    ]
    lines += [f"{'PASS' if ok else 'MISS'}  {text}" for ok, text in goals]
    lines += result.get("profiles", [])
    return lines, all(ok for ok, _ in goals)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=10_000, help="tools registered")
    parser.add_argument("--visible", type=int, default=50, help="tools not deferred")
    parser.add_argument("--queries", type=int, default=300, help="tool_search queries timed")
    parser.add_argument("--filters", type=int, default=200, help="distinct fresh filters")
    parser.add_argument("--cold", type=int, default=10, help="whole-catalog cold selections")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", metavar="PATH", help="also write every number as JSON")
    parser.add_argument("--tracemalloc", action="store_true", help="trace registration too")
    parser.add_argument("--profile", action="store_true", help="cProfile selection and search")
    args = parser.parse_args()
    if not 0 <= args.visible <= args.tools:
        parser.error("--visible must be between 0 and --tools")
    result = run(args)
    lines, ok = report(result)
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
