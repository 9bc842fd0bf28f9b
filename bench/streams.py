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

Goals (issue 16): one worker carries the streams, all open at once (response headers in and
the stream not yet ended), with no error, and stays under 300 MB RSS.

Method: nothing is pinned. With 2 workers on this two-core machine the proxy, the model and
the client all share both cores, as on a small production box; the 1-worker run is measured
the same way so the two compare. The soft open-files limit is raised to the hard one (each
stream holds a socket in the client and two in the proxy).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loop_load import percentile, run_load
from overhead import (
    Processes,
    _cpu_jiffies,
    _cpu_seconds,
    _wrk_result,
    _wrk_script,
    bench_main,
    child_pids,
    free_port,
    request_body,
    toolwire_command,
    wait_ready,
)
from slow_upstream import PIECE, TEXT

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
RSS_GOAL_MB = 300.0


def raise_open_files() -> int:
    """Raise the soft open-files limit to the hard one (children inherit it); the new soft."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def worker_pids(pid: int) -> list[int]:
    """The processes serving requests: uvicorn's spawned workers under `pid`, else `pid`."""
    workers = []
    for child in child_pids(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if b"spawn_main" in f.read():
                    workers.append(child)
        except OSError:
            continue
    return workers or [pid]


def rss_mb(pid: int) -> float | None:
    """Resident set size of a process in MB (VmRSS), None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


# --------------------------------------------------------------------------- streams


class StreamRun:
    """Opens the streams, reads every one to its end and keeps what each took."""

    def __init__(self, url: str, chunks: int, interval: float) -> None:
        self.url, self.chunks, self.interval = url, chunks, interval
        self.body = orjson.dumps({**request_body(True), "max_tokens": chunks + 10})
        self.first = b'"content":"' + PIECE.encode()[:3]
        """The start of a content delta with text (orjson, as Toolwire renders: no spaces)."""
        self.piece = PIECE.encode()
        """The text of each model chunk: a proxy may merge deltas, so pieces are counted."""
        self.ttfb: list[float] = []
        self.ttft: list[float] = []
        self.totals: list[float] = []
        self.errors: dict[str, int] = {}
        self.samples: list[str] = []
        self.open = 0
        self.max_open = 0

    def _fail(self, kind: str, detail: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1
        if len(self.samples) < 5:
            self.samples.append(f"{kind}: {detail[:300]}")

    async def one(self, http: aiohttp.ClientSession) -> None:
        started = time.perf_counter()
        headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
        try:
            async with http.post(self.url, data=self.body, headers=headers) as resp:
                if resp.status != 200:
                    self._fail("status", f"{resp.status}: {(await resp.read())[:200]!r}")
                    return
                self.open += 1
                self.max_open = max(self.max_open, self.open)
                try:
                    await self._read(resp, started)
                finally:
                    self.open -= 1
        except (aiohttp.ClientError, TimeoutError) as exc:
            self._fail(type(exc).__name__, str(exc) or repr(exc))

    async def _read(self, resp: aiohttp.ClientResponse, started: float) -> None:
        # Cheap on purpose (no JSON parsing): 1,000 streams are 10,000 chunks a second, and
        # this client shares the cores with the proxy it measures.
        parts: list[bytes] = []
        first_byte = first_token = None
        async for data in resp.content.iter_any():
            parts.append(data)
            if first_token is None:
                first_byte = first_byte or time.perf_counter()
                if self.first in data or self.first in b"".join(parts[-2:]):
                    first_token = time.perf_counter()
        body = b"".join(parts)
        pieces = body.count(self.piece)
        done = body.rstrip().endswith(b"data: [DONE]")
        if not done or pieces != self.chunks or first_byte is None or first_token is None:
            self._fail("content", f"done={done}, {pieces} of {self.chunks} content pieces")
            return
        self.ttfb.append((first_byte - started) * 1000)
        self.ttft.append((first_token - started) * 1000)
        self.totals.append(time.perf_counter() - started)

    async def run(self, streams: int, ramp: float, pid: int, upstream: int) -> dict[str, Any]:
        connector = aiohttp.TCPConnector(limit=0)
        timeout = aiohttp.ClientTimeout(total=self.chunks * self.interval + 120)
        peaks: dict[int, float] = {}
        stop = asyncio.Event()

        async def sample() -> None:
            while not stop.is_set():
                for worker in worker_pids(pid):
                    value = rss_mb(worker)
                    if value is not None:
                        peaks[worker] = max(peaks.get(worker, 0.0), value)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.5)

        cpu_before = _cpu_snapshot(pid, upstream)
        started = time.perf_counter()
        session = aiohttp.ClientSession(connector=connector, timeout=timeout)
        async with session as http, asyncio.TaskGroup() as group:
            group.create_task(sample())
            async with asyncio.TaskGroup() as streams_group:
                for index in range(streams):
                    streams_group.create_task(self.one(http))
                    if ramp and index % 50 == 49:
                        await asyncio.sleep(ramp * 50 / streams)
            stop.set()
        seconds = time.perf_counter() - started
        cpu = _cpu_use(cpu_before, _cpu_snapshot(pid, upstream), seconds)
        # Toolwire's CPU per relayed chunk: what caps the chunks per second a worker carries.
        relayed = max(1, len(self.totals) * (self.chunks + 2))
        cpu["toolwire_us_per_chunk"] = round(cpu["toolwire"] / 100 * seconds * 1e6 / relayed, 1)
        interval_ms = self.interval * 1000
        return {
            "streams": streams,
            "ok": len(self.totals),
            "errors": sum(self.errors.values()),
            "errors_by_kind": dict(self.errors),
            "error_samples": self.samples,
            "max_open": self.max_open,
            "seconds": seconds,
            "cpu_pct": cpu,
            "ttfb_p50_ms": percentile(self.ttfb, 50),
            "ttfb_p99_ms": percentile(self.ttfb, 99),
            "ttft_p50_ms": percentile(self.ttft, 50),
            "ttft_p99_ms": percentile(self.ttft, 99),
            "added_ttft_p50_ms": percentile(self.ttft, 50) - interval_ms,
            "added_ttft_p99_ms": percentile(self.ttft, 99) - interval_ms,
            "stream_seconds_p50": percentile(self.totals, 50),
            "rss_mb": {str(k): round(v, 1) for k, v in sorted(peaks.items())},
            "max_worker_rss_mb": max(peaks.values()) if peaks else math.nan,
        }


def _cpu_snapshot(pid: int, upstream: int) -> dict[str, Any]:
    self_usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "toolwire": sum(_cpu_seconds(p) or 0.0 for p in {pid, *worker_pids(pid)}),
        "upstream": _cpu_seconds(upstream) or 0.0,
        "client": self_usage.ru_utime + self_usage.ru_stime,
        "cores": _cpu_jiffies(),
    }


def _cpu_use(before: dict[str, Any], after: dict[str, Any], seconds: float) -> dict[str, float]:
    """% of one core each side used (toolwire: all its workers), and how busy the machine was
    (100 = every core; the rest of it is other programs)."""
    use = {k: 100 * (after[k] - before[k]) / seconds for k in ("toolwire", "upstream", "client")}
    busy = sum(after["cores"][c][0] - before["cores"][c][0] for c in after["cores"])
    total = sum(after["cores"][c][1] - before["cores"][c][1] for c in after["cores"])
    use["machine_busy"] = 100 * busy / total if total else math.nan
    return {k: round(v, 1) for k, v in use.items()}


# --------------------------------------------------------------------------- req/s


def throughput(args: argparse.Namespace, procs: Processes, base: str, work: Path) -> dict[str, Any]:
    """Unstreamed req/s at c=`--concurrency`: wrk when installed, else aiohttp from here."""
    url = f"{base}/v1/chat/completions"
    wrk = shutil.which("wrk")
    if wrk is None:
        return uvloop.run(_python_throughput(args, url))
    script = work / "wrk.lua"
    script.write_text(_wrk_script(orjson.dumps(request_body(False)).decode(), False))

    def cmd(seconds: float) -> list[str]:
        return [wrk, "-t1", "-c", str(args.concurrency), "-d", f"{max(1, math.ceil(seconds))}s",
                "--timeout", "10s", "-s", str(script), url]  # fmt: skip

    if args.warmup > 0:
        procs.run("wrk", cmd(args.warmup), None, timeout=120)
    out, _ = procs.run("wrk", cmd(args.duration), None, timeout=args.duration + 120)
    raw = _wrk_result(out)
    kinds = ("connect", "read", "write", "timeout", "bad_content", "bad_status")
    errors = {kind: int(raw[kind]) for kind in kinds if raw[kind]}
    ok = raw["requests"] - raw["bad_content"] - raw["bad_status"]
    return {
        "loadgen": "wrk",
        "rps": ok / (raw["duration_us"] / 1e6),
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
        "tools": [{"python": str(ROOT / "examples" / "tools.py"), "namespace": "demo"}],
    }
    path = work / "toolwire.yaml"
    path.write_bytes(orjson.dumps(config))  # JSON is YAML
    port = free_port()
    cmd = [*toolwire_command(), "serve", "--config", str(path), "--port", str(port)]
    cmd += ["--workers", str(workers), "--log-level", "warning"]
    name = f"toolwire-{workers}w"
    proc = procs.start(name, cmd, None)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(procs, name, proc, base, timeout=60)
        _progress(f"{workers} worker(s): req/s at c={args.concurrency}")
        rps = throughput(args, procs, base, work)
        _progress(f"{workers} worker(s): {args.streams} streams")
        run = StreamRun(f"{base}/v1/chat/completions", args.chunks, args.interval)
        streams = uvloop.run(run.run(args.streams, args.ramp, proc.pid, upstream[1]))
    finally:
        procs.stop(proc)
        procs.procs.remove(proc)
    return {"workers": workers, "throughput": rps, "streams": streams}


def run(args: argparse.Namespace) -> dict[str, Any]:
    nofile = raise_open_files()
    with tempfile.TemporaryDirectory(prefix="toolwire-streams-") as tmp:
        work = Path(tmp)
        procs = Processes(work)
        try:
            port = free_port()
            cmd = [sys.executable, str(BENCH / "slow_upstream.py"), "--port", str(port)]
            cmd += ["--chunks", str(args.chunks), "--interval", str(args.interval)]
            upstream = procs.start("upstream", cmd, None)
            wait_ready(procs, "upstream", upstream, f"http://127.0.0.1:{port}")
            counts = [1] if args.workers == 1 else [1, args.workers]
            results = [
                measure_workers(args, procs, (f"http://127.0.0.1:{port}/v1", upstream.pid), n, work)
                for n in counts
            ]
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
    }
    return {"meta": meta, "results": results}


# --------------------------------------------------------------------------- report


def _f(value: float | None, digits: int = 1, width: int = 8) -> str:
    if value is None or math.isnan(value):
        return f"{'-':>{width}}"
    return f"{value:>{width}.{digits}f}"


def goal_lines(result: dict[str, Any]) -> list[str]:
    one = result["results"][0]["streams"]
    ok = not one["errors"] and one["ok"] == one["max_open"] == one["streams"]
    lines = [
        f"{'PASS' if ok else 'MISS'}  1 worker: {one['ok']} of {one['streams']} streams "
        f"complete, {one['errors']} errors, at most {one['max_open']} open at once "
        "(goal: all open at once, every one complete, no error)",
    ]
    rss, interval = one["max_worker_rss_mb"], result["meta"]["interval_s"]
    lines.append(
        f"{'PASS' if rss < RSS_GOAL_MB else 'MISS'}  1 worker: RSS at most {rss:.0f} MB "
        f"(goal < {RSS_GOAL_MB:.0f} MB); time to first token p99 {one['ttft_p99_ms']:.1f} ms "
        f"(+{one['added_ttft_p99_ms']:.1f} ms beyond the model's {interval:g} s)"
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


def render(result: dict[str, Any]) -> str:
    meta = result["meta"]
    lines = [
        f"Open streams: {meta['streams']} streams of {meta['chunks']} chunks every "
        f"{meta['interval_s']:g} s, opened over {meta['ramp_s']:g} s; req/s: unstreamed, "
        f"c={meta['concurrency']}, {meta['duration']:g} s after {meta['warmup']:g} s",
        f"pinning: {meta['pinning']}; open files limit {meta['open_files_limit']}",
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
    parser.add_argument("--json", metavar="PATH", help="also write every number as JSON to PATH")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.streams < 1 or args.chunks < 1:
        parser.error("--workers, --streams and --chunks must be at least 1")
    return args


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    return bench_main(argv, parse_args, run, render)


if __name__ == "__main__":
    sys.exit(main())
