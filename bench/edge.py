"""The HTTP server at the edge: uvicorn + httptools against granian (Rust), in the same run.

    .venv/bin/python bench/edge.py                        # 3 rounds, then 1,000 open streams
    .venv/bin/python bench/edge.py --rounds 5 --json edge.json
    .venv/bin/python bench/edge.py --callgrind            # and instructions per request
    .venv/bin/python bench/edge.py --streams 0            # no open-streams part

Targets, each one worker in one process, measured in the same rounds (order rotated):

* pass-through (uvicorn)   `bench/passthrough.py`: uvicorn, httptools, uvloop.
* pass-through (granian)   the same app under granian (`bench/edge_granian.py passthrough`),
                           embedded: its Rust runtime on a thread of its own, the app on the
                           process's uvloop.
* toolwire (uvicorn)       `toolwire serve` with the example tools.
* toolwire (granian)       the same config served as `toolwire serve` serves it, granian at
                           the edge (`bench/edge_granian.py toolwire`: the drain, the head
                           limits on granian's options, see there).

Per round and mode (unstreamed; streamed, 20 chunks) every target gets `bench/overhead.py`'s
measurements (`bench/overhead_measure.py`): p50 at c=1, then req/s and the server's CPU per
request at c=32 and at c=64, the server pinned to one core and the fake upstream and load
generator (wrk) to the other. Ratios are each round's figure over the uvicorn pass-through's
in the same round, then the median over rounds; CPU per request is the figure to decide on
(req/s and p50 move with whatever else runs on the machine).

Open streams (`bench/streams.py`'s method, unpinned): every target in front of
`bench/slow_upstream.py` gets `--streams` streamed requests opened over a second and held
10 s; errors, the most open at once and the process's peak RSS.

`--callgrind` also counts instructions per request (`bench/instructions.py`'s method: each
target under callgrind, sequential requests after a warm-up, every thread counted): the
figure a busy machine does not move.

granian is no dependency of Toolwire (uvicorn stays its server: see the README's
benchmarks); this bench needs it installed: `.venv/bin/pip install 'granian>=2.8,<3'`.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench import wrk
from bench.cpu import Cpus
from bench.harness import (
    EXAMPLE_TOOLS,
    Processes,
    Server,
    add_json,
    add_no_pin,
    bench_main,
    cell,
    git_revision,
    median,
    progress,
    script,
    terminate_on_sigterm,
    toolwire_serve,
    upstream_command,
    write_config,
)
from bench.overhead_measure import Measure, write_bodies
from bench.overhead_targets import Target
from bench.workload import MODES

SERVERS = ("uvicorn", "granian")
BASE = "passthrough_uvicorn"
"""The target every ratio is taken against."""
LEVELS = (32, 64)
"""Concurrency of the req/s and CPU-per-request runs."""


# --------------------------------------------------------------------------- targets


def _commands(work: Path, upstream_url: str, log_level: str) -> list[tuple[str, str, list[str]]]:
    """(key, label, command without --port) of every target."""
    config = {
        "server": {"host": "127.0.0.1"},
        "upstreams": [{"name": "fake", "base_url": upstream_url}],
        "tools": [EXAMPLE_TOOLS],
    }
    path = write_config(work / f"toolwire-{upstream_url.rsplit(':', 1)[1][:5]}.yaml", config)
    uvicorn = script("passthrough.py", "--upstream", upstream_url, "--log-level", log_level)
    granian = script("edge_granian.py", "passthrough", "--upstream", upstream_url)
    return [
        ("passthrough_uvicorn", "pass-through (uvicorn)", uvicorn),
        ("passthrough_granian", "pass-through (granian)", [*granian, "--log-level", log_level]),
        ("toolwire_uvicorn", "toolwire (uvicorn)", toolwire_serve(path, log_level=log_level)),
        (
            "toolwire_granian",
            "toolwire (granian)",
            script("edge_granian.py", "toolwire", "--config", str(path), "--log-level", log_level),
        ),
    ]


def _start(
    procs: Processes, commands: list[tuple[str, str, list[str]]], cpu: int | None, tag: str = ""
) -> list[Target]:
    targets = []
    for key, label, cmd in commands:
        server = procs.serve(key + tag, cmd, cpu)
        targets.append(Target(key, label, server))
    for target in targets:
        procs.wait_ready(target.server, timeout=60)
    return targets


# --------------------------------------------------------------------------- rounds


def _round(
    args: argparse.Namespace, measures: dict[int, Measure], targets: list[Target], index: int
) -> dict[str, Any]:
    shift = index % len(targets)
    order = targets[shift:] + targets[:shift]
    first = measures[LEVELS[0]]
    this: dict[str, Any] = {}
    for mode in MODES:
        this[mode] = {}
        for target in order:
            progress(f"round {index + 1}/{args.rounds} {mode:<6} {target.label}")
            row: dict[str, Any] = {"latency": first.latency(mode, target)}
            for level, measure in measures.items():
                row[f"c{level}"] = _throughput(measure, mode, target, level)
            this[mode][target.key] = row
    return this


def _throughput(measure: Measure, mode: str, target: Target, level: int) -> dict[str, Any]:
    """`Measure.throughput` at `level` connections, whether it takes the level as an argument
    or from its `args.concurrency` (each Measure here is made with its level there)."""
    before = _user_sys(target.pid)
    if "concurrency" in inspect.signature(measure.throughput).parameters:
        result = measure.throughput(mode, target, level)  # type: ignore[call-arg]
    else:
        result = measure.throughput(mode, target)  # type: ignore[call-arg]
    after = _user_sys(target.pid)
    # The kernel's share of the server's CPU (warm-up included): callgrind does not count it.
    used = [b - a for a, b in zip(before, after, strict=True)]
    result["sys_share"] = used[1] / sum(used) if sum(used) else None
    return result


def _user_sys(pid: int) -> tuple[float, float]:
    """utime and stime of a process (every thread), in clock ticks."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return float(fields[11]), float(fields[12])


def _summary(rounds: list[dict[str, Any]], keys: list[str]) -> dict[str, Any]:
    """Medians over rounds of each figure, and of each round's ratio to the base target."""
    out: dict[str, Any] = {}
    for mode in MODES:
        out[mode] = {}
        for key in keys:
            rows = [r[mode][key] for r in rounds]
            bases = [r[mode][BASE] for r in rounds]
            one: dict[str, Any] = {
                "p50_ms": median([row["latency"]["p50_ms"] for row in rows]),
                "added_p50_ms": median(
                    [
                        row["latency"]["p50_ms"] - b["latency"]["p50_ms"]
                        for row, b in zip(rows, bases, strict=True)
                    ]
                ),
                "errors": sum(row["latency"]["errors"]["total"] for row in rows),
            }
            for level in LEVELS:
                c = f"c{level}"
                one[f"rps_{c}"] = median([row[c]["rps"] for row in rows])
                one[f"cpu_us_{c}"] = median([row[c]["cpu_us_per_req"] for row in rows])
                one[f"rps_ratio_{c}"] = median(
                    [_ratio(row[c]["rps"], b[c]["rps"]) for row, b in zip(rows, bases, strict=True)]
                )
                cpu_ratios = [
                    _ratio(row[c]["cpu_us_per_req"], b[c]["cpu_us_per_req"])
                    for row, b in zip(rows, bases, strict=True)
                ]
                one[f"cpu_ratio_{c}"] = median(cpu_ratios)
                present = [r for r in cpu_ratios if r is not None]
                one[f"cpu_ratio_{c}_range"] = [min(present), max(present)] if present else None
                one[f"sys_share_{c}"] = median([row[c]["sys_share"] for row in rows])
                one["errors"] += sum(row[c]["errors"]["total"] for row in rows)
                if key.endswith("_granian"):
                    one.update(_against_uvicorn(rounds, mode, key, c))
            out[mode][key] = one
    return out


def _against_uvicorn(rounds: list[dict[str, Any]], mode: str, key: str, c: str) -> dict[str, Any]:
    """A granian target's CPU per request over the same app's on uvicorn, round by round:
    the median and the range."""
    rows = [r[mode][key][c] for r in rounds]
    pairs = [r[mode][key.replace("_granian", "_uvicorn")][c] for r in rounds]
    ratios = [
        _ratio(row["cpu_us_per_req"], pair["cpu_us_per_req"])
        for row, pair in zip(rows, pairs, strict=True)
    ]
    present = [r for r in ratios if r is not None]
    return {
        f"cpu_vs_uvicorn_{c}": median(ratios),
        f"cpu_vs_uvicorn_{c}_range": [min(present), max(present)] if present else None,
    }


def _other_work(rounds: list[dict[str, Any]]) -> dict[str, float] | None:
    """How busy the server's core was with other programs during the req/s runs (% of the
    core: its busy time minus our server's CPU): the run's noise."""
    shares = [
        row[f"c{level}"]["cpu"]["cpu_a_other_pct"]
        for one in rounds
        for rows in one.values()
        for row in rows.values()
        for level in LEVELS
    ]
    present = [share for share in shares if share is not None]
    if not present:
        return None
    return {"median": median(present), "min": min(present), "max": max(present)}


def _ratio(value: float | None, base: float | None) -> float | None:
    return None if value is None or not base else value / base


# --------------------------------------------------------------------------- open streams


def _streams(args: argparse.Namespace, procs: Processes, work: Path) -> dict[str, Any]:
    """Every target in front of the slow model, one after the other, unpinned."""
    from bench.open_streams import StreamRun
    from bench.streams import raise_open_files

    raise_open_files()
    slow = script("slow_upstream.py", "--chunks", str(args.chunks), "--interval", "0.1")
    upstream = procs.serve("slow-upstream", slow, None)
    procs.wait_ready(upstream)
    results: dict[str, Any] = {}
    import uvloop

    for key, label, cmd in _commands(work, f"{upstream.base}/v1", args.log_level):
        progress(f"open streams: {args.streams} on {label}")
        server = procs.serve(key + "-streams", cmd, None)
        try:
            procs.wait_ready(server, timeout=60)
            run = StreamRun(f"{server.base}/v1/chat/completions", args.chunks, 0.1)
            results[key] = uvloop.run(run.run(args.streams, 1.0, server.pid, upstream.pid))
        finally:
            procs.end(server.proc)
    procs.end(upstream.proc)
    return results


# --------------------------------------------------------------------------- callgrind


def _callgrind(args: argparse.Namespace, procs: Processes, upstream: Server) -> dict[str, Any]:
    from bench.instructions import Counted, _body, _count, _start

    counted = [
        Counted(key, label, cmd)
        for key, label, cmd in _commands(procs.workdir, f"{upstream.base}/v1", "warning")
    ]
    count_args = argparse.Namespace(requests=args.callgrind_requests, warmup=30)
    counts: dict[str, dict[str, float]] = {}
    for one in counted:
        counts[one.key] = {}
        for mode in MODES:
            progress(f"callgrind {mode:<6} {one.label}")
            _start(procs, one, mode, 600)
            try:
                counts[one.key][mode] = _count(one, _body("plain", mode == "stream"), count_args)
            finally:
                assert one.server is not None
                procs.end(one.server.proc)
    return counts


# --------------------------------------------------------------------------- run


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    cpus = Cpus.detect(not args.no_pin)
    cpus.pin_self()
    found = wrk.find("auto")
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="toolwire-edge-") as tmp, terminate_on_sigterm():
        work = Path(tmp)
        procs = Processes(work)
        try:
            upstream = procs.serve("upstream", upstream_command(), cpus.other)
            procs.wait_ready(upstream)
            targets: list[Target] = []
            if args.rounds:
                progress("starting servers ...")
                commands = _commands(work, f"{upstream.base}/v1", args.log_level)
                targets = _start(procs, commands, cpus.server)
                bodies = write_bodies(work)
                measures = {
                    level: Measure(
                        argparse.Namespace(**{**vars(args), "concurrency": level}),
                        procs,
                        cpus,
                        work,
                        found,
                        upstream,
                        bodies,
                    )
                    for level in LEVELS
                }
                rounds = [_round(args, measures, targets, i) for i in range(args.rounds)]
                for target in targets:
                    procs.end(target.server.proc)
                result["rounds"] = rounds
                result["summary"] = _summary(rounds, [t.key for t in targets])
                result["other_work"] = _other_work(rounds)
                result["labels"] = {t.key: t.label for t in targets}
            if args.callgrind:
                result["instructions"] = _callgrind(args, procs, upstream)
            procs.end(upstream.proc)
            if args.streams:
                result["streams"] = _streams(args, procs, work)
        finally:
            procs.close()
    result["meta"] = {
        "rounds": args.rounds,
        "requests": args.requests,
        "duration": args.duration,
        "warmup": args.warmup,
        "levels": list(LEVELS),
        "loadgen": "wrk (1 thread)" if found else "bench/load.py (python)",
        "pinning": cpus.describe(),
        "streams": args.streams,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "git": git_revision(),
        "load_average_at_end": os.getloadavg(),
        "seconds": round(time.monotonic() - started, 1),
    }
    return result


# --------------------------------------------------------------------------- report


def render(result: dict[str, Any]) -> str:
    meta = result["meta"]
    lines = [
        f"Edge servers: {meta['rounds']} rounds, c=1 {meta['requests']} requests, "
        f"c={'/'.join(str(c) for c in meta['levels'])} for {meta['duration']:g} s; "
        f"{meta['loadgen']}; {meta['pinning']}",
        "ratios: each round's figure over the uvicorn pass-through's, median over rounds "
        "(range: the rounds' lowest and highest CPU ratio; sys: the kernel's share of the "
        "server's CPU)",
    ]
    other = result.get("other_work")
    if other:
        lines.append(
            f"other programs on the server's core during the req/s runs: {other['median']:.0f}% "
            f"of it (median; {other['min']:.0f}-{other['max']:.0f}%): above a few %, every "
            "CPU figure is noisy"
        )
    if result.get("summary"):
        lines += _table(result["summary"], result["labels"])
        lines += _against_lines(result["summary"])
    if result.get("instructions"):
        lines += _count_lines(result["instructions"])
    if result.get("streams"):
        lines += _stream_lines(result["streams"], meta["streams"])
    return "\n".join(lines)


def _table(summary: dict[str, Any], labels: dict[str, str]) -> list[str]:
    lines = []
    for mode in MODES:
        lines.append("")
        lines.append(
            f"{mode:<8}{'':<22}{'p50':>7}{'+p50':>7} |"
            + "".join(
                f"{'rps c' + str(c):>9}{'x':>6}{'us/rq':>7}{'x':>6}{'range':>12}{'sys':>5} |"
                for c in LEVELS
            )
        )
        for key, one in summary[mode].items():
            row = f"{'!' if one['errors'] else ' '} {labels[key]:<28}"
            row += f"{cell(one['p50_ms'], 2, 7)}{cell(one['added_p50_ms'], 2, 7)} |"
            for c in LEVELS:
                span = one[f"cpu_ratio_c{c}_range"]
                spread = f"{span[0]:.2f}-{span[1]:.2f}" if span else "-"
                row += (
                    f"{cell(one[f'rps_c{c}'], 0, 9)}{cell(one[f'rps_ratio_c{c}'], 2, 6)}"
                    f"{cell(one[f'cpu_us_c{c}'], 0, 7)}{cell(one[f'cpu_ratio_c{c}'], 2, 6)}"
                    f"{spread:>12}{_pct(one[f'sys_share_c{c}'])} |"
                )
            lines.append(row)
    return lines


def _against_lines(summary: dict[str, Any]) -> list[str]:
    """Each app's CPU per request on granian over its own on uvicorn."""
    lines = [""]
    for mode in MODES:
        for key, one in summary[mode].items():
            if not key.endswith("_granian"):
                continue
            parts = []
            for c in LEVELS:
                span = one[f"cpu_vs_uvicorn_c{c}_range"] or [math.nan, math.nan]
                parts.append(
                    f"c={c} {one[f'cpu_vs_uvicorn_c{c}']:.2f}x ({span[0]:.2f}-{span[1]:.2f})"
                )
            lines.append(
                f"INFO  {mode:<6} {key.removesuffix('_granian')}: CPU per request on granian / "
                "on uvicorn, " + ", ".join(parts)
            )
    return lines


def _count_lines(counts: dict[str, dict[str, float]]) -> list[str]:
    lines = ["", "instructions per request (callgrind, sequential, every thread)"]
    base = counts[BASE]
    for key, modes in counts.items():
        lines.append(
            f"  {key:<24}"
            + "".join(
                f"{mode:>8} {modes[mode] / 1000:>7.0f}k {modes[mode] / base[mode]:>5.2f}x"
                for mode in MODES
            )
        )
    for what in ("passthrough", "toolwire"):
        granian, uvicorn = counts[f"{what}_granian"], counts[f"{what}_uvicorn"]
        lines.append(
            f"INFO  {what}: instructions on granian / on uvicorn, "
            + ", ".join(f"{mode} {granian[mode] / uvicorn[mode]:.3f}x" for mode in MODES)
        )
    return lines


def _stream_lines(streams: dict[str, Any], count: int) -> list[str]:
    lines = ["", f"open streams ({count}, 10 s each, unpinned)"]
    for key, one in streams.items():
        lines.append(
            f"  {key:<24} ok {one['ok']:>5}  errors {one['errors']:>4}  open at once "
            f"{one['max_open']:>5}  RSS {one['max_worker_rss_mb']:>6.0f} MB  ttft p99 "
            f"{one['ttft_p99_ms']:>7.1f} ms  CPU {one['cpu_pct']['toolwire']:>4.0f}%"
        )
        lines += [f"      {sample}" for sample in one["error_samples"]]
    return lines


def _pct(share: float | None) -> str:
    return f"{'-':>5}" if share is None or share != share else f"{100 * share:>4.0f}%"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="uvicorn against granian at the edge, pass-through and toolwire.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("--rounds", type=int, default=3, help="repeats; medians are reported (0: none)")
    add("--requests", type=int, default=300, help="c=1 requests per run")
    add("--warmup-requests", type=int, default=30, help="c=1 warm-up requests")
    add("--duration", type=float, default=3.0, help="counted seconds per req/s run")
    add("--warmup", type=float, default=1.0, help="uncounted seconds per req/s run")
    add("--streams", type=int, default=1000, help="open streams per target (0: none)")
    add("--chunks", type=int, default=100, help="chunks per open stream, one per 0.1 s")
    add("--callgrind", action="store_true", help="also count instructions per request")
    add("--callgrind-requests", type=int, default=150, help="counted requests per mode")
    add("--log-level", default="warning", help="log level of every server")
    add_no_pin(parser)
    add_json(parser, bare=True)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    if importlib.util.find_spec("granian") is None:
        print("granian is not installed: .venv/bin/pip install 'granian>=2.8,<3'", file=sys.stderr)
        return 2
    return bench_main(argv, parse_args, run, render)


if __name__ == "__main__":
    sys.exit(main())
