"""How much latency and throughput Toolwire costs on top of its upstream.

    .venv/bin/python bench/overhead.py                  # table + PASS/MISS goal lines
    .venv/bin/python bench/overhead.py --json out.json  # the same, and every number as JSON
    .venv/bin/python bench/overhead.py --json           # JSON only, on stdout
    .venv/bin/python bench/overhead.py --rounds 5 --duration 5 --with-no-tools
    .venv/bin/python bench/overhead.py --apis chat --toolwire-tree /tmp/old  # before/after
    git worktree add /tmp/at-134e72f 134e72f            # the instructions goal's reference
    .venv/bin/python bench/overhead.py --goal-tree /tmp/at-134e72f  # every goal measured
    .venv/bin/python bench/state.py   # the cost of state.backend: redis against memory

What is measured
----------------
Targets answer the same request (`bench/workload.py`: model + system and user messages; the
streamed variant adds `"stream": true`), each measured the same way in the same run:

* direct        the fake upstream itself (`bench/fake_upstream.py`, an asyncio protocol on
                uvloop): the floor, nothing in between.
* pass-through  `bench/passthrough.py`, a minimal proxy on Toolwire's own stack (uvicorn with
                httptools + uvloop, one worker; Toolwire's own upstream client, orjson) that
                forwards the body bytes and relays the answer bytes. The floor for *any*
                Python proxy on this stack (`--reference-client aiohttp`: on aiohttp).
* injecting floor
                the same `bench/passthrough.py` with `--inject-tools`: it also adds toolwire's
                tool schemas (from `toolwire tools --json`) to every request, serialises it
                again, and parses every answer (each event of a stream) to see whether it
                calls a tool. The least work any proxy that injects and runs tools must do on
                this stack; what toolwire costs beyond it is its own machinery (validation,
                policy, the loop, telemetry). Reported beside the goals, not as one.
* toolwire      `toolwire serve` with a generated config: the fake as its upstream and the
                example tools, so their schemas are injected into every upstream request as
                in production. The fake answers text, so no tool runs: this is the cost of the
                proxy path itself (parse, inject, re-serialise, decode SSE, assemble,
                re-render). `--with-no-tools` adds a `toolwire (no tools)` variant with an
                empty `tools:` list; `--with-metrics-off` one with telemetry.metrics off.
* toolwire responses
                the same `toolwire serve` process sent the same request as a Responses API
                body on `/v1/responses`. Toolwire converts it to the very same upstream chat
                request, so the difference to `toolwire` is the Responses front: validating
                the body, converting it, building the response object and its events, and
                storing the response. The store is capped at `--response-store-mib`, so
                storing, and evicting, is measured but the heap stays the same size through
                the run: with the default budget a run's stored responses would grow the
                server, and every later request on it (chat ones included) would cost more
                CPU for the larger garbage collections, tilting the rows measured after it.
                `--apis chat` leaves it out.
* toolwire @REV `--toolwire-tree DIR` (repeatable) also measures, with the chat request, the
                toolwire of another source tree (say a git worktree of an older commit), run
                as `python -m proxy serve` by this venv with DIR first on its import path:
                the fairest before/after comparison, interleaved in the same rounds.

For each of non-streamed and streamed (the fake sends the text in content chunks):

* c=1    `--requests` sequential requests on one keep-alive connection after
         `--warmup-requests`; p50 and p99 of the whole response (for streams: until the last
         byte) and, for streams, of the time to the first body byte (the first SSE event the
         client can show). "+p50"/"+p99" is what the target adds to direct: the median over
         rounds of (target - direct) in the same round.
* c=32, c=64
         (`--concurrency`) closed loop, 32 then 64 connections, `--warmup` seconds not
         counted, then `--duration` seconds counted: requests/s, and the server's CPU use in
         that window (utime+stime from /proc, all threads; 100% = one core busy) and per
         request ("us/rq": server CPU microseconds per answered request, the figure least
         moved by a busy CPU B); the table's CPU columns are the largest count's. Each taken
         within a round and then the median over rounds: toolwire / pass-through, toolwire /
         injecting floor, floor / pass-through, toolwire responses / toolwire and toolwire /
         toolwire @REV, for req/s (per count) and CPU per request, with the c=1 p50 (and
         first byte) difference.

Goals
-----
Issue 29's, printed as a table after the figures, one line per goal starting with PASS, MISS
or `-` (not measured in this run, with how to measure it); `--json` holds the same under
"goals" (each goal's figure, limit, verdict, per-round figures and spread):

* req/s at c=32 and at c=64, non-streamed and streamed: toolwire >= 0.87x the pass-through's.
* CPU per request at the largest count: toolwire <= 1.3x the injecting floor's.
* p50 at c=1, non-streamed and streamed: toolwire at most 0.3 ms beyond the pass-through.
* instructions per plain request, non-streamed and streamed: toolwire at or below 134e72f's,
  with `--goal-tree DIR` (DIR a worktree of 134e72f): after the timed rounds,
  `bench/instructions.py --goal-tree DIR` counts both trees (and the pass-through and the
  floor) under callgrind, several minutes.

Each figure is the median over rounds of a ratio or difference taken within a round, so every
goal's reference is measured in the same run; beside it the lowest and highest round, and how
many rounds pass when they disagree. A target with errors misses every goal. The load average
at the start is recorded; above 1 the table says its verdicts are not reliable (on a shared
2-core machine other programs then take a share of the cores the run measures). The
instruction count is not moved by load.

Every response is checked (status 200; chat: the assistant text equal to the fake's text,
`[DONE]` at the end of a stream; responses: the output message's `content[0].text` equal to
it, and a stream's last frame an `event: response.completed` whose response holds it, with
the `response.output_text.delta` deltas joined equal to it too); a target with errors is
marked `!` and its errors are printed.

Method
------
* Every server is its own process on an ephemeral 127.0.0.1 port, polled on /v1/models until
  ready, and killed (its whole process group) in a `finally`, also on Ctrl-C or SIGTERM.
* With `os.sched_setaffinity` the server under test runs on CPU A (the first allowed CPU) and
  everything else on CPU B: the upstream fake the proxies call, the load generator, and this
  script (idle while a run goes). "direct" is measured against a second fake instance pinned
  to CPU A, so the target under test always has a core of its own and never competes with
  the load generator. Without affinity support nothing is pinned and the output says so.
* c=1 latency uses `bench/load.py` (Python, aiohttp, uvloop, its own process): its own
  overhead is the same for every target and cancels out of the "+" columns.
* req/s runs use `wrk` (`bench/wrk.py`: C, one thread, a generated Lua script that sets
  the POST body and checks every response's status and text) when it is installed, else
  `bench/load.py`. wrk is preferred because it is cheaper per request than the Python
  generator, and CPU B carries the generator together with the upstream fake: a costly
  generator saturates CPU B first and caps the req/s of the fast targets (direct,
  pass-through) below what they can do, which makes every ratio look better than it is. The
  output reports the load generator's CPU and CPU B's total (load generator + upstream fake)
  next to every req/s number and warns when CPU B, not the server, was the bottleneck.
  `--loadgen python` forces the Python generator (`apt-get install -y wrk` to get wrk).
* The run is repeated `--rounds` times; each round runs every mode and every target with the
  target order rotated, and the table shows the median over rounds.
* Servers log at `--log-level` (default warning, for every target alike). Note that
  `toolwire serve`'s own default is info, which also writes a uvicorn access-log line per
  request; that cost is not in these numbers.
* The upstream is `bench/fake_upstream.py`: the test suite's fake's answers (the same bytes
  in the same writes, tests/bench/test_fake_upstream.py), made once a second rather than per
  request by a bare asyncio protocol, so that CPU B bounds the req/s of the fast targets as
  seldom as it can: counted under callgrind, 25k instructions a request unstreamed and 61k
  streamed, against the test suite's aiohttp fake's 290k and 887k. A stream still costs it
  a write per event (26 system calls a request), as a real upstream's does.

Reading the numbers
-------------------
* "+p50" at c=1 is the latency Toolwire adds per request on an idle machine.
* req/s with the server at ~100% CPU is its capacity on one core. "tw/pt" is Toolwire's
  share of the best a Python proxy on this stack does. "pt/direct" shows what a Python proxy
  hop costs at all (with one core for the proxy and one shared by the fake and the load
  generator, so it is below 1 even for a zero-cost proxy).
* A stream's "first byte" is how soon the client sees the first token; its whole-stream time
  grows with the number of chunks the proxy decodes and re-renders.
* Numbers on loopback are best cases: a real upstream takes 100s of ms per answer, so these
  overheads matter for capacity (how many concurrent streams one process carries) much more
  than for the latency a user notices.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench import wrk
from bench.cpu import Cpus
from bench.goals import load_average
from bench.harness import (
    Processes,
    add_json,
    add_no_pin,
    add_toolwire_tree,
    bench_main,
    check_trees,
    git_revision,
    progress,
    script,
    terminate_on_sigterm,
    toolwire_command,
)
from bench.overhead_goals import CONCURRENCY, GOAL_COMMIT, goal_summary
from bench.overhead_measure import Measure, write_bodies
from bench.overhead_report import render, summarise
from bench.overhead_targets import Target, start_targets
from bench.workload import APIS, CHUNKS, MODES, request_body


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Latency and throughput overhead of Toolwire vs a pass-through proxy.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("--rounds", type=int, default=3, help="repeats; medians are reported")
    add("--requests", type=int, default=500, help="c=1 requests per run")
    add("--warmup-requests", type=int, default=50, help="c=1 warm-up requests")
    add(
        "--concurrency",
        type=_counts,
        default=",".join(map(str, CONCURRENCY)),
        metavar="C[,C]",
        help="connections for req/s, each measured in every round",
    )
    add("--duration", type=float, default=3.0, help="counted seconds per req/s run")
    add("--warmup", type=float, default=1.0, help="uncounted seconds per req/s run")
    add(
        "--loadgen",
        choices=["auto", "wrk", "python"],
        default="auto",
        help="req/s load generator; auto = wrk when installed, else python",
    )
    add(
        "--reference-client",
        choices=("http1", "aiohttp"),
        default="http1",
        help="the upstream client of the pass-through and the injecting floor: Toolwire's own "
        "(registry/http1/, the goals' reference: the same stack), or aiohttp (the "
        "reference of the runs before Toolwire had a client of its own)",
    )
    add("--with-no-tools", action="store_true", help="also measure toolwire with no tools")
    add(
        "--with-metrics-off",
        action="store_true",
        help="also measure toolwire with telemetry.metrics off (tracing is off in both)",
    )
    add(
        "--apis",
        type=_apis,
        default=APIS,
        metavar="API[,API]",
        help="wire formats sent to toolwire: chat, responses (the same server's /v1/responses)",
    )
    add(
        "--response-store-mib",
        type=int,
        default=4,
        help="byte budget of toolwire's response store (state.max_memory_bytes) in MiB; "
        "0 = toolwire's default (256 MiB), which lets the heap grow through the run",
    )
    add_toolwire_tree(
        parser,
        "also measure toolwire (chat) from another source tree, e.g. a git worktree of "
        "an older commit, run by this venv's python with that tree first on sys.path",
    )
    add(
        "--goal-tree",
        type=Path,
        metavar="DIR",
        help="also count instructions per plain request (bench/instructions.py, callgrind: "
        "minutes) of this tree and of DIR's, after the timed rounds: the instructions goal, "
        f"whose reference is {GOAL_COMMIT} (git worktree add DIR {GOAL_COMMIT})",
    )
    add("--goal-requests", type=int, default=200, help="counted requests per instruction count")
    add_no_pin(parser)
    add("--log-level", default="warning", help="log level of every server")
    add_json(parser, bare=True)
    args = parser.parse_args(argv)
    args.toolwire_tree = check_trees(parser, args.toolwire_tree)
    if args.goal_tree is not None:
        args.goal_tree = check_trees(parser, [args.goal_tree])[0]
    return args


def _counts(value: str) -> tuple[int, ...]:
    try:
        counts = tuple(sorted({int(c) for c in value.split(",") if c.strip()}))
    except ValueError:
        counts = ()
    if not counts or counts[0] < 1:
        raise argparse.ArgumentTypeError("one or more connection counts, e.g. 32,64")
    return counts


def _apis(value: str) -> tuple[str, ...]:
    apis = tuple(a.strip() for a in value.split(",") if a.strip())
    unknown = [a for a in apis if a not in APIS]
    if unknown or "chat" not in apis:
        raise argparse.ArgumentTypeError(f"one or more of {', '.join(APIS)}, chat included")
    return apis


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Start every server, measure every round, stop them all."""
    started = time.monotonic()
    load = load_average()
    cpus = Cpus.detect(not args.no_pin)
    cpus.pin_self()
    found = wrk.find(args.loadgen)
    with tempfile.TemporaryDirectory(prefix="toolwire-bench-") as tmp, terminate_on_sigterm():
        workdir = Path(tmp)
        procs = Processes(workdir)
        try:
            progress("starting servers ...")
            upstream, targets = start_targets(args, procs, cpus, workdir)
            measure = Measure(args, procs, cpus, workdir, found, upstream, write_bodies(workdir))
            rounds = [_round(args, measure, targets, index) for index in range(args.rounds)]
        finally:
            procs.close()
        counted = _instructions(args, procs, workdir) if args.goal_tree else None
    result: dict[str, Any] = {
        "meta": _meta(args, cpus, found, targets),
        "labels": {t.key: t.label for t in targets},
        "summary": summarise(rounds, [t.key for t in targets]),
        "rounds": rounds,
    }
    result["meta"]["load_average_start"] = load
    result["meta"]["load_average_end"] = load_average()
    if counted is not None:
        result["instructions"] = counted
    result["goals"] = goal_summary(result)
    result["meta"]["seconds"] = round(time.monotonic() - started, 1)
    progress(f"done in {result['meta']['seconds']:.0f} s")
    return result


def _round(
    args: argparse.Namespace, measure: Measure, targets: list[Target], index: int
) -> dict[str, Any]:
    """Every mode and target once, the target order rotated by the round's index."""
    shift = index % len(targets)
    order = targets[shift:] + targets[:shift]
    this: dict[str, Any] = {}
    for mode in MODES:
        this[mode] = {}
        for target in order:
            progress(f"round {index + 1}/{args.rounds} {mode:<6} {target.label}")
            this[mode][target.key] = {
                "latency": measure.latency(mode, target),
                "throughput": {
                    str(c): measure.throughput(mode, target, c) for c in args.concurrency
                },
            }
    return this


def _instructions(args: argparse.Namespace, procs: Processes, workdir: Path) -> dict[str, Any]:
    """`bench/instructions.py --goal-tree DIR`, run to its end: this tree's instructions per
    plain request and DIR's (and the pass-through's and the floor's), counted, not timed."""
    out = workdir / "instructions.json"
    cmd = script("instructions.py", "--requests", str(args.goal_requests))
    cmd += ["--goal-tree", str(args.goal_tree), "--json", str(out)]
    progress(f"instructions per plain request, this tree and {args.goal_tree} (callgrind) ...")
    try:
        procs.run("instructions", cmd, None, timeout=3600)
    except RuntimeError as exc:  # valgrind missing, a tree that does not start: no verdict
        return {"error": str(exc)[-600:]}
    counted: dict[str, Any] = orjson.loads(out.read_bytes())
    return counted


def _meta(
    args: argparse.Namespace, cpus: Cpus, found: str | None, targets: list[Target]
) -> dict[str, Any]:
    trees = [t for t in targets if t.key.startswith("toolwire_tree")]
    return {
        "rounds": args.rounds,
        "requests": args.requests,
        "warmup_requests": args.warmup_requests,
        "concurrency": list(args.concurrency),
        "duration": args.duration,
        "warmup": args.warmup,
        "loadgen": "wrk (1 thread)" if found else "bench/load.py (python)",
        "pinning": cpus.describe(),
        "body_bytes": len(orjson.dumps(request_body(False))),
        "responses_body_bytes": len(orjson.dumps(request_body(False, "responses"))),
        "apis": list(args.apis),
        "toolwire_trees": {
            t.key: str(tree) for t, tree in zip(trees, args.toolwire_tree, strict=True)
        },
        "goal_tree": str(args.goal_tree) if args.goal_tree else None,
        "chunks": CHUNKS,
        "log_level": args.log_level,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "toolwire_command": " ".join(toolwire_command()),
        "git": git_revision(),
    }


def main(argv: list[str] | None = None) -> int:
    return bench_main(argv, parse_args, run, render)


if __name__ == "__main__":
    sys.exit(main())
