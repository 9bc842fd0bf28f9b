"""How many open streams one Toolwire worker carries, and what a second worker adds.

    .venv/bin/python bench/streams.py                     # 1,000 streams of 10 s, one worker
    .venv/bin/python bench/streams.py --workers 2         # and the same with 2 workers
    .venv/bin/python bench/streams.py --streams 200 --chunks 30 --json out.json

What is measured
----------------
`toolwire serve` (the example tools injected, as in `bench/overhead.py`) in front of
`bench/slow_upstream.py`, a model whose streams send one chunk every `--interval` s
(`--chunks` of them: 100 x 0.1 s = 10 s open by default). Per worker count (1, and
`--workers N` when N > 1):

* req/s   unstreamed requests at c=`--concurrency` (the slow model answers those at once) for
          `--duration` s after `--warmup` s: wrk when installed (its generated Lua script checks
          every answer's text), else this process's aiohttp client.
* streams `--streams` streamed requests opened over `--ramp` s and held to their end; every
          stream is checked (status 200, the content chunks joined, `[DONE]`). Reported: errors,
          the most streams open at once, time to the first body byte and to the first token
          (the first non-empty content delta, which the model sends `--interval` s after the
          request: the "+" column is what remains beyond that), p50 and p99, and the RSS of
          every worker process sampled every 0.5 s (the largest).

Goals (issue 29): one worker carries 1,000 streams, all open at once (response headers in and
the stream not yet ended) and every one complete, with no error; and its RSS stays under
200 MB. Each prints PASS or MISS in a goal table (`--json` holds it under "goals"); a run of
fewer streams than the goal's 1,000 gives no verdict on the first. When the load average at
the start is above 1, the table says its verdicts are not reliable.

Method: nothing is pinned. With 2 workers on a two-core machine the proxy, the model and
the client all share both cores, as on a small production box; the 1-worker run is measured
the same way so the two compare. The soft open-files limit is raised to the hard one (each
stream holds a socket in the client and two in the proxy).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import platform
import resource
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import uvloop

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench import goals, wrk
from bench.goals import Goal, load_average
from bench.harness import (
    EXAMPLE_TOOLS,
    Processes,
    add_json,
    bench_main,
    cell,
    progress,
    script,
    toolwire_serve,
    write_config,
)
from bench.loop_load import run_load
from bench.open_streams import StreamRun
from bench.slow_upstream import TEXT
from bench.workload import request_body

STREAMS_GOAL = 1000
"""Streams one worker carries at once, all complete, with no error."""
RSS_GOAL_MB = 200.0
"""The largest worker's peak RSS while it carries them, in MB: under this."""


def raise_open_files() -> int:
    """Raise the soft open-files limit to the hard one (children inherit it); the new soft."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# --------------------------------------------------------------------------- req/s


def throughput(args: argparse.Namespace, procs: Processes, base: str, work: Path) -> dict[str, Any]:
    """Unstreamed req/s at c=`--concurrency`: wrk when installed, else aiohttp from here."""
    url = f"{base}/v1/chat/completions"
    found = wrk.find("auto")
    if found is None:
        return uvloop.run(_python_throughput(args, url))
    lua = work / "wrk.lua"
    lua.write_text(wrk.lua_script(orjson.dumps(request_body(False)).decode(), False, "chat", TEXT))
    if args.warmup > 0:
        procs.run("wrk", wrk.command(found, args.concurrency, args.warmup, lua, url), None, 120)
    cmd = wrk.command(found, args.concurrency, args.duration, lua, url)
    out, _ = procs.run("wrk", cmd, None, timeout=args.duration + 120)
    raw = wrk.result(out)
    errors: dict[str, int] = {}
    wrk.merge_errors(errors, raw)
    return {
        "loadgen": "wrk",
        "rps": wrk.answered(raw) / (raw["duration_us"] / 1e6),
        "p50_ms": raw["p50_us"] / 1000,
        "p99_ms": raw["p99_us"] / 1000,
        "errors": sum(errors.values()),
        "error_samples": [raw["sample"]] if raw.get("sample") else [],
    }


async def _python_throughput(args: argparse.Namespace, url: str) -> dict[str, Any]:
    body = orjson.dumps(request_body(False))
    headers = {"Content-Type": "application/json"}
    connector = aiohttp.TCPConnector(limit=args.concurrency)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def call() -> str | None:
            async with http.post(url, data=body, headers=headers) as resp:
                raw = await resp.read()
                if resp.status != 200:
                    return f"status {resp.status}"
                content = orjson.loads(raw)["choices"][0]["message"]["content"]
                return None if content == TEXT else f"content {content!r}"

        outcome = await run_load(call, args.concurrency, args.warmup, args.duration)
    summary = outcome.summary()
    return {"loadgen": "python (aiohttp)", **summary}


# --------------------------------------------------------------------------- run


def measure_workers(
    args: argparse.Namespace,
    procs: Processes,
    upstream: tuple[str, int],
    workers: int,
    work: Path,
) -> dict[str, Any]:
    """req/s and the streams, on a `toolwire serve --workers N` of its own."""
    config = {
        "server": {"host": "127.0.0.1"},
        "upstreams": [{"name": "slow", "base_url": upstream[0]}],
        "tools": [EXAMPLE_TOOLS],
    }
    cmd = [*toolwire_serve(write_config(work / "toolwire.yaml", config)), "--workers", str(workers)]
    server = procs.serve(f"toolwire-{workers}w", cmd, None)
    try:
        procs.wait_ready(server, timeout=60)
        progress(f"{workers} worker(s): req/s at c={args.concurrency}")
        rps = throughput(args, procs, server.base, work)
        progress(f"{workers} worker(s): {args.streams} streams")
        run = StreamRun(f"{server.base}/v1/chat/completions", args.chunks, args.interval)
        streams = uvloop.run(run.run(args.streams, args.ramp, server.pid, upstream[1]))
    finally:
        procs.end(server.proc)
    return {"workers": workers, "throughput": rps, "streams": streams}


def run(args: argparse.Namespace) -> dict[str, Any]:
    load = load_average()
    nofile = raise_open_files()
    with tempfile.TemporaryDirectory(prefix="toolwire-streams-") as tmp:
        work = Path(tmp)
        procs = Processes(work)
        try:
            slow = script("slow_upstream.py", "--chunks", str(args.chunks))
            slow += ["--interval", str(args.interval)]
            upstream = procs.serve("upstream", slow, None)
            procs.wait_ready(upstream)
            counts = [1] if args.workers == 1 else [1, args.workers]
            served = (f"{upstream.base}/v1", upstream.pid)
            results = [measure_workers(args, procs, served, n, work) for n in counts]
        finally:
            procs.close()
    meta = {
        "streams": args.streams,
        "chunks": args.chunks,
        "interval_s": args.interval,
        "ramp_s": args.ramp,
        "concurrency": args.concurrency,
        "duration": args.duration,
        "warmup": args.warmup,
        "open_files_limit": nofile,
        "pinning": "none (proxy, model and client share every core)",
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_start": load,
        "load_average_end": load_average(),
    }
    result = {"meta": meta, "results": results}
    result["goals"] = goal_summary(result)
    return result


# --------------------------------------------------------------------------- report


def _f(value: float | None, digits: int = 1, width: int = 8) -> str:
    return cell(value, digits, width)


def goal_summary(result: dict[str, Any]) -> dict[str, Any]:
    """The goals of one worker's run, with their verdicts and the run's load (JSON)."""
    one = result["results"][0]["streams"]
    carried = min(one["ok"], one["max_open"])
    short = one["streams"] < STREAMS_GOAL
    streams_goal = Goal(
        "streams_one_worker",
        f"1 worker: streams open at once, every one complete (of {one['streams']})",
        None if short else carried,
        ">=",
        STREAMS_GOAL,
        unit="",
        errors=one["errors"],
        note=f"not measured: run with --streams {STREAMS_GOAL} (the goal's count)" if short else "",
        detail=f"{one['ok']} complete, at most {one['max_open']} open at once",
    )
    rss = Goal(
        "rss_one_worker",
        f"1 worker: peak RSS with {one['streams']} streams open",
        one["max_worker_rss_mb"],
        "<",
        RSS_GOAL_MB,
        unit="MB",
        errors=one["errors"],
        note="" if not short else f"with {one['streams']} streams, not the goal's {STREAMS_GOAL}",
    )
    return goals.summary([streams_goal, rss], result["meta"].get("load_average_start"))


def goal_lines(result: dict[str, Any]) -> list[str]:
    one = result["results"][0]["streams"]
    summary = result.get("goals") or goal_summary(result)
    lines = goals.table(summary, "Goals (issue 29): one worker")
    interval = result["meta"]["interval_s"]
    lines.append(
        f"INFO  1 worker: {one['ok']} of {one['streams']} streams complete, {one['errors']} "
        f"errors, at most {one['max_open']} open at once; time to first token p99 "
        f"{one['ttft_p99_ms']:.1f} ms (+{one['added_ttft_p99_ms']:.1f} ms beyond the model's "
        f"{interval:g} s)"
    )
    if len(result["results"]) > 1:
        many = result["results"][1]
        ratio = many["throughput"]["rps"] / result["results"][0]["throughput"]["rps"]
        lines.append(
            f"INFO  {many['workers']} workers / 1 worker: req/s {ratio:.2f}x at "
            f"c={result['meta']['concurrency']}; streams p99 first token "
            f"{many['streams']['ttft_p99_ms']:.1f} ms vs {one['ttft_p99_ms']:.1f} ms"
        )
    return lines


def _load(meta: dict[str, Any]) -> str:
    start, end = meta.get("load_average_start"), meta.get("load_average_end")
    if not start:
        return ""
    return f"; load average {start[0]:.2f} at the start, {(end or [math.nan])[0]:.2f} at the end"


def render(result: dict[str, Any]) -> str:
    meta = result["meta"]
    lines = [
        f"Open streams: {meta['streams']} streams of {meta['chunks']} chunks every "
        f"{meta['interval_s']:g} s, opened over {meta['ramp_s']:g} s; req/s: unstreamed, "
        f"c={meta['concurrency']}, {meta['duration']:g} s after {meta['warmup']:g} s",
        f"pinning: {meta['pinning']}; open files limit {meta['open_files_limit']}" + _load(meta),
        "times in ms; ttfb = first body byte, ttft = first token (+ = beyond the model's "
        "interval); RSS = the largest worker's peak",
        "",
        f"  {'workers':<8}{'req/s':>8}{'errors':>7} |{'streams':>8}{'ok':>6}{'open':>6}"
        f"{'ttfb50':>8}{'ttfb99':>8}{'ttft50':>8}{'ttft99':>8}{'+ttft99':>8}{'RSS MB':>8}"
        f"{'errors':>7}",
    ]
    for row in result["results"]:
        t, s = row["throughput"], row["streams"]
        mark = "!" if t["errors"] or s["errors"] else " "
        lines.append(
            f"{mark} {row['workers']:<8}{_f(t['rps'], 0)}{t['errors']:>7} |{s['streams']:>8}"
            f"{s['ok']:>6}{s['max_open']:>6}{_f(s['ttfb_p50_ms'])}{_f(s['ttfb_p99_ms'])}"
            f"{_f(s['ttft_p50_ms'])}{_f(s['ttft_p99_ms'])}{_f(s['added_ttft_p99_ms'])}"
            f"{_f(s['max_worker_rss_mb'], 0)}{s['errors']:>7}"
        )
    lines.append("")
    for row in result["results"]:
        cpu = row["streams"].get("cpu_pct")
        if cpu:
            lines.append(
                f"  {row['workers']} worker(s), CPU during the streams (100 = one core): toolwire "
                f"{cpu['toolwire']:.0f} ({cpu.get('toolwire_us_per_chunk', math.nan):.0f} us per "
                f"chunk), model {cpu['upstream']:.0f}, client {cpu['client']:.0f}; machine "
                f"{cpu['machine_busy']:.0f}% busy (all cores)"
            )
    lines.append("")
    lines += goal_lines(result)
    for row in result["results"]:
        for part in ("throughput", "streams"):
            if row[part]["errors"]:
                lines.append(f"ERRORS {row['workers']} worker(s) {part}: {row[part]['errors']}")
                lines += [f"    {sample}" for sample in row[part]["error_samples"]]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Open streams on one Toolwire worker, and N workers against one.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--streams", type=int, default=1000, help="streams open at once")
    parser.add_argument("--chunks", type=int, default=100, help="content chunks per stream")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between chunks")
    parser.add_argument("--ramp", type=float, default=1.0, help="seconds to open the streams")
    parser.add_argument("--workers", type=int, default=1, help="also measure N workers (N > 1)")
    parser.add_argument("--concurrency", type=int, default=64, help="connections for req/s")
    parser.add_argument("--duration", type=float, default=5.0, help="counted seconds for req/s")
    parser.add_argument("--warmup", type=float, default=1.0, help="uncounted seconds for req/s")
    add_json(parser)
    args = parser.parse_args(argv)
    if args.workers < 1 or args.streams < 1 or args.chunks < 1:
        parser.error("--workers, --streams and --chunks must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    return bench_main(argv, parse_args, run, render)


if __name__ == "__main__":
    sys.exit(main())
