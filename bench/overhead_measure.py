"""One measurement of `bench/overhead.py`: a target at c=1 (latency) or at c=32 or c=64 (req/s
and the CPU each side used), run by a load generator in its own process on the shared CPU.

The load generator runs apart so its CPU is never charged to the server under test; at c=1 it
is `bench/load.py` (its own overhead is the same for every target and cancels out of the
added-latency columns), at c=64 wrk when installed (see `bench/wrk.py`), else `bench/load.py`.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench import wrk
from bench.cpu import Cpus, core_jiffies, cpu_seconds, kernel_seconds
from bench.harness import Processes, Server, percentile, script
from bench.overhead_targets import Target
from bench.workload import APIS, MODES, TEXT, request_body


def write_bodies(workdir: Path) -> dict[tuple[str, str], Path]:
    """Request body files by (api, mode), for the load generators."""
    bodies = {}
    for api in APIS:
        for mode in MODES:
            path = workdir / f"body-{api}-{mode}.json"
            path.write_bytes(orjson.dumps(request_body(mode == "stream", api)))
            bodies[api, mode] = path
    return bodies


@dataclass
class Snapshot:
    """CPU counters at one instant: per core, per watched process, load generators."""

    cores: dict[int, tuple[int, int]]
    procs: dict[int, float | None]
    runs: float
    kernel: dict[int, float | None] = field(default_factory=dict)
    """Each watched process's kernel time (stime), a part of `procs`."""

    @classmethod
    def take(cls, procs: Processes, pids: list[int]) -> Snapshot:
        kernel = {pid: kernel_seconds(pid) for pid in pids}
        used = {pid: cpu_seconds(pid) for pid in pids}
        return cls(core_jiffies(), used, procs.run_cpu_seconds, kernel)


@dataclass
class Measure:
    """The load runs of one benchmark run, and the CPU accounting around each."""

    args: argparse.Namespace
    procs: Processes
    cpus: Cpus
    workdir: Path
    wrk: str | None
    upstream: Server
    bodies: dict[tuple[str, str], Path] = field(default_factory=dict)

    def _loadgen(self, mode: str, target: Target) -> list[str]:
        body = str(self.bodies[target.api, mode])
        return script("load.py", "--url", target.url, "--api", target.api, "--body", body,
                      "--expect", TEXT)  # fmt: skip

    def _watched(self, target: Target) -> list[int]:
        return [target.pid] if target.key == "direct" else [target.pid, self.upstream.pid]

    def latency(self, mode: str, target: Target) -> dict[str, Any]:
        """c=1: `--requests` sequential requests after `--warmup-requests`."""
        before = Snapshot.take(self.procs, self._watched(target))
        cmd = [*self._loadgen(mode, target), "latency", "--requests", str(self.args.requests),
               "--warmup-requests", str(self.args.warmup_requests)]  # fmt: skip
        out, _ = self.procs.run("loadgen", cmd, self.cpus.other, timeout=300)
        raw = orjson.loads(out.strip().splitlines()[-1])
        result = {
            "p50_ms": percentile(raw["total_ms"], 50),
            "p99_ms": percentile(raw["total_ms"], 99),
            "ttfb_p50_ms": percentile(raw["ttfb_ms"], 50),
            "ttfb_p99_ms": percentile(raw["ttfb_ms"], 99),
            "ok": raw["ok"],
            "loadgen_cpu_pct": raw["loadgen_cpu_pct"],
            "errors": raw["errors"],
        }
        after = Snapshot.take(self.procs, self._watched(target))
        result["cpu"] = self.accounting(before, after, target.pid)
        return result

    def throughput(self, mode: str, target: Target, concurrency: int) -> dict[str, Any]:
        """req/s in a closed loop of `concurrency` connections, and the CPU the server and the
        upstream used."""
        watch = self._watched(target)
        before = Snapshot.take(self.procs, watch)
        if self.wrk is not None:
            result = self._wrk(mode, target, watch, concurrency)
        else:
            result = self._python(mode, target, watch, concurrency)
        after = Snapshot.take(self.procs, watch)
        result["cpu"] = self.accounting(before, after, target.pid)
        server = result["watched_cpu_pct"].get(str(target.pid))
        upstream = result["watched_cpu_pct"].get(str(watch[-1])) if len(watch) > 1 else 0.0
        result["server_cpu_pct"] = server
        result["upstream_cpu_pct"] = upstream
        # Server CPU per answered request, in microseconds (the cost of one request).
        result["cpu_us_per_req"] = (
            None if server is None or not result["rps"] else server * 1e4 / result["rps"]
        )
        result["cpu_b_pct"] = (upstream or 0.0) + result["loadgen_cpu_pct"]
        result["server_kernel_share"] = _kernel_share(before, after, target.pid)
        return result

    def _python(self, mode: str, target: Target, watch: list[int], c: int) -> dict[str, Any]:
        args = self.args
        cmd = [*self._loadgen(mode, target), "throughput", "--concurrency", str(c),
               "--duration", str(args.duration), "--warmup", str(args.warmup)]  # fmt: skip
        for pid in watch:
            cmd += ["--watch-pid", str(pid)]
        timeout = args.duration + args.warmup + 60
        out, _ = self.procs.run("loadgen", cmd, self.cpus.other, timeout=timeout)
        raw: dict[str, Any] = orjson.loads(out.strip().splitlines()[-1])
        raw["loadgen"] = "python"
        return raw

    def _wrk(self, mode: str, target: Target, watch: list[int], c: int) -> dict[str, Any]:
        assert self.wrk is not None
        lua = self.workdir / f"wrk-{target.api}-{mode}.lua"
        if not lua.exists():
            body = self.bodies[target.api, mode].read_text()
            lua.write_text(wrk.lua_script(body, mode == "stream", target.api, TEXT))
        other = self.cpus.other
        errors: dict[str, int] = {}
        if self.args.warmup > 0:
            cmd = wrk.command(self.wrk, c, self.args.warmup, lua, target.url)
            out, _ = self.procs.run("wrk", cmd, other, timeout=120)
            wrk.merge_errors(errors, wrk.result(out))
        before = {pid: cpu_seconds(pid) for pid in watch}
        wall0 = time.perf_counter()
        cmd = wrk.command(self.wrk, c, self.args.duration, lua, target.url)
        out, wrk_cpu = self.procs.run("wrk", cmd, other, timeout=self.args.duration + 120)
        wall = time.perf_counter() - wall0
        after = {pid: cpu_seconds(pid) for pid in watch}
        raw = wrk.result(out)
        wrk.merge_errors(errors, raw)
        seconds = raw["duration_us"] / 1e6
        watched = {str(pid): _pct(before[pid], after[pid], wall) for pid in watch}
        return {
            "mode": "throughput",
            "loadgen": "wrk",
            "concurrency": c,
            "seconds": seconds,
            "ok": wrk.answered(raw),
            "rps": wrk.answered(raw) / seconds,
            "p50_ms": raw["p50_us"] / 1000,
            "p99_ms": raw["p99_us"] / 1000,
            "loadgen_cpu_pct": 100 * wrk_cpu / wall,
            "watched_cpu_pct": watched,
            "errors": {
                "total": sum(errors.values()),
                "by_kind": errors,
                "samples": [raw["sample"]] if raw.get("sample") else [],
            },
        }

    def accounting(self, before: Snapshot, after: Snapshot, server: int) -> dict[str, Any]:
        """How busy each core was between two snapshots, and how much of it was not ours.

        "other" = a core's busy time minus the CPU of our processes pinned to it: other
        programs on the machine, plus kernel time charged to nobody (interrupts). A few % is
        normal; much more means something else competed with the bench and its numbers are
        noisy.
        """
        cpus = self.cpus
        a, b = _core_pct(before, after, cpus.server), _core_pct(before, after, cpus.other)
        wall = _wall(before, after, cpus.server)
        ours_a = 100 * _used(before, after, server) / wall if wall else math.nan
        upstream = _used(before, after, self.upstream.pid) + after.runs - before.runs
        ours_b = 100 * upstream / wall if wall else math.nan
        return {
            "cpu_a_busy_pct": a,
            "cpu_b_busy_pct": b,
            "cpu_a_other_pct": None if a is None else a - ours_a,
            "cpu_b_other_pct": None if b is None else b - ours_b,
        }


def _pct(before: float | None, after: float | None, wall: float) -> float | None:
    return None if before is None or after is None else 100 * (after - before) / wall


def _core_pct(before: Snapshot, after: Snapshot, cpu: int | None) -> float | None:
    if cpu is None or cpu not in before.cores or cpu not in after.cores:
        return None
    busy = after.cores[cpu][0] - before.cores[cpu][0]
    total = after.cores[cpu][1] - before.cores[cpu][1]
    return 100 * busy / total if total else None


def _wall(before: Snapshot, after: Snapshot, cpu: int | None) -> float:
    """Seconds between two snapshots: jiffies per core advance at the clock tick rate."""
    ref = cpu if cpu is not None else next(iter(after.cores), None)
    if ref is None or ref not in before.cores:
        return math.nan
    return (after.cores[ref][1] - before.cores[ref][1]) / os.sysconf("SC_CLK_TCK")


def _used(before: Snapshot, after: Snapshot, pid: int) -> float:
    b, a = before.procs.get(pid), after.procs.get(pid)
    return 0.0 if a is None or b is None else a - b


def _kernel_share(before: Snapshot, after: Snapshot, pid: int) -> float | None:
    """The part of a process's CPU between two snapshots spent in the kernel (None: unread)."""
    used = _used(before, after, pid)
    b, a = before.kernel.get(pid), after.kernel.get(pid)
    return None if a is None or b is None or used <= 0 else (a - b) / used
