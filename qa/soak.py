"""Soak test: does a Toolwire server under a long mixed load keep its resources bounded?

    .venv/bin/python qa/soak.py                           # 30 minutes, a line a minute
    .venv/bin/python qa/soak.py --minutes 3 --every 20    # a quick check
    .venv/bin/python qa/soak.py --json soak.json          # also every sample as JSON
    .venv/bin/python qa/soak.py --tree /tmp/tw-HEAD       # Toolwire from another tree

Exit status 0 when every check passes, 1 when one fails (growth, a failed request, a server
that does not return to idle, client disconnects that do not reach the upstream, a traceback
in the server's log). `--tree DIR` imports Toolwire from DIR, e.g. a `git archive HEAD`
export, so a soak is not disturbed by edits in the working tree; `--server-entry` runs another
script in place of `qa/soak_server.py proxy` (say one that leaks, to see the verdict fail).

What runs
---------
* The upstream is `qa/soak_server.py upstream`: the test suite's `FakeUpstream` with one
  `Reply.func` that answers by the request's last message: a tool result gets a text that
  quotes it ("The tool answered: 5.0"); user text with "fail" gets a 500; with "stall" or
  "leave" a stream that stalls after its first words; with "tool" (and tools injected) a call
  of `demo_calculate` (examples/tools.py `calculate`) with `2 + 3`; anything else a text
  streamed in 10 chunks.
* The server is `qa/soak_server.py proxy`: Toolwire from `create_app(parse_settings(...))`
  on uvicorn (httptools, uvloop, log level warning), with the fake as its upstream
  (first-byte and idle timeouts 2 s, so a stall ends), the example tools (namespace demo,
  `execution.mode: thread`) and a 4 MiB Responses store (it fills during the warm-up, so its
  eviction is exercised and its memory is bounded from then on). It appends its count of live
  asyncio tasks to a stats file every second.
* This script is the load generator: `--concurrency` workers (aiohttp, closed loop), each
  request of one of these kinds, in fixed proportions (per 149 requests; a shuffled
  schedule, cycled):

    chat.stream  32  Chat, streamed text: deltas joined equal the fake's text, `[DONE]` last
    chat.json    24  Chat, not streamed: the message content equals the fake's text
    chat.tool    24  Chat, streamed, one tool round: the text quotes the tool's result
    resp.tool    24  Responses, streamed, one tool round: `response.completed` last, its
                     output text equal to the deltas and quoting the tool's result
    resp.json    20  Responses, not streamed: status completed, the fake's text
    upstream500   8  the fake answers 500 (Chat, Responses; streamed or not): a 502 with an
                     OpenAI error body
    stall         1  the fake stalls mid-stream (Chat, Responses): the stream ends with an
                     error frame (`response.failed`) within the idle timeout + 5 s
    leave         8  the client disconnects once the first words arrive (Chat, Responses)
    malformed     8  not JSON, a missing or mistyped field (Chat, Responses): a 400 with an
                     OpenAI error body

What is measured
----------------
Every second this script reads the server process's RSS, open fds, threads and descendant
processes from /proc, and the server's task counts (fewest and most of ten a second) from its
stats file. Every `--every` seconds it prints one line: the server's CPU use in the interval
(100% = one core), RSS at its end, and for each count "floor/peak", the lowest and highest
reading in the interval (the floor is what is left when the fewest requests are in flight:
the figure a leak raises), then the requests done and failed by kind in the interval, and a
few samples of new failures.

Verdict
-------
The first `--warmup-intervals` (2) samples are skipped. Of the rest, the medians of the middle
third and of the last third are compared: a count floor (fds, threads, tasks, children) that
rose by more than its slack (+8, +4, +20, +2), or RSS by more than 15 %, fails, and so does a
count floor that rose in each of the last 5 samples. Besides growth:

* requests: every response must be what a user expects (any failure fails the run);
* drain: after the load, the server's task count must come back within +20 of its count
  before the load, its children to what they were, and the fake must have no reply in flight;
* leave: a client that disconnects must release the upstream call; the fake times how long
  each "leave" request was held: the median must be under 1 s (the idle timeout is 2 s, so a
  proxy that only lets go when the stall times out fails);
* log: no traceback in the server's log (an error a client may never see, such as a task
  exception nobody retrieved).

Method
------
On the benches' harness (bench/harness.py): each server is its own process in its own
session on an ephemeral 127.0.0.1 port, polled until ready, and its whole process group is
killed in a `finally`, also on Ctrl-C or SIGTERM. With two or more CPUs the server runs on the
first allowed CPU and the fake and this script on the second (`--no-pin`: nothing is pinned).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
from collections.abc import Awaitable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson

if __name__ == "__main__":  # run by path, qa/ is sys.path[0]: import `qa`, `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.cpu import Cpus
from bench.harness import ROOT, Processes, Server, progress, terminate_on_sigterm
from qa.soak_client import UPSTREAM_TIMEOUT_S
from qa.soak_load import Interrupted, Tally, soak
from qa.soak_verdict import drain_check, growth_checks, leave_check, log_check, request_check
from qa.soak_watch import ServerWatch

SERVER_ENTRY = ROOT / "qa" / "soak_server.py"
STORE_BYTES = 4 * 1024 * 1024
LOG_LINES_SHOWN = 10


def proxy_config(upstream_base: str) -> dict[str, Any]:
    return {
        "server": {"host": "127.0.0.1"},
        "upstreams": [
            {
                "name": "fake",
                "base_url": f"{upstream_base}/v1",
                "first_byte_timeout_s": UPSTREAM_TIMEOUT_S,
                "idle_timeout_s": UPSTREAM_TIMEOUT_S,
            }
        ],
        "tools": [{"python": "examples/tools.py", "namespace": "demo"}],
        "execution": {"mode": "thread"},
        "state": {"max_memory_bytes": STORE_BYTES},
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup-intervals", type=int, default=2)
    parser.add_argument("--json", metavar="PATH", help="write every sample and check as JSON")
    parser.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    parser.add_argument(
        "--tree",
        type=Path,
        default=ROOT,
        help="import Toolwire from this source tree (default: this checkout)",
    )
    parser.add_argument(
        "--server-entry",
        type=Path,
        default=SERVER_ENTRY,
        help="the script run as `<entry> proxy ...` (default qa/soak_server.py)",
    )
    args = parser.parse_args(argv)
    intervals = args.minutes * 60 / args.every
    if intervals < args.warmup_intervals + 3:
        parser.error(
            f"{intervals:.0f} intervals of {args.every:g} s: the verdict needs at least "
            f"{args.warmup_intervals + 3} (warm-up + 3)"
        )
    return args


def _run_loop(coroutine: Awaitable[Any]) -> Any:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)  # type: ignore[arg-type]
    return uvloop.run(coroutine)  # type: ignore[arg-type]


def run(args: argparse.Namespace) -> int:
    cpus = Cpus.detect(not args.no_pin)
    cpus.pin_self()
    with tempfile.TemporaryDirectory(prefix="toolwire-soak-") as tmp, terminate_on_sigterm():
        workdir = Path(tmp)
        procs = Processes(workdir)
        try:
            up_stats, tasks = workdir / "upstream.json", workdir / "tasks.txt"
            entry = [sys.executable, str(SERVER_ENTRY), "upstream", "--stats", str(up_stats)]
            upstream = procs.serve("upstream", entry, cpus.other)
            procs.wait_ready(upstream, timeout=60)
            server = _start_proxy(args, procs, cpus, upstream, tasks)
            pinning = (
                f"server on CPU {cpus.server}, fake and load on CPU {cpus.other}"
                if cpus.pinned
                else "not pinned"
            )
            print(
                f"soak: {args.minutes:g} min, a sample every {args.every:g} s, "
                f"{args.concurrency} workers; {pinning}; server pid {server.pid}, "
                f"toolwire from {args.tree}",
                flush=True,
            )
            result = _run_loop(soak(args, server.base, ServerWatch(server.pid, tasks)))
            upstream_stats = orjson.loads(up_stats.read_bytes())
            server_log = procs.log("proxy")
        finally:
            procs.close()
    return report(args, result, upstream_stats, server_log)


def _start_proxy(
    args: argparse.Namespace, procs: Processes, cpus: Cpus, upstream: Server, tasks: Path
) -> Server:
    """Toolwire by `--server-entry`, importing from `--tree`, counting its tasks into `tasks`."""
    config = procs.workdir / "toolwire.json"
    config.write_bytes(orjson.dumps(proxy_config(upstream.base)))
    cmd = [sys.executable, str(args.server_entry), "proxy", "--config", str(config)]
    cmd += ["--stats", str(tasks), "--tree", str(args.tree)]
    server = procs.serve("proxy", cmd, cpus.server)
    procs.wait_ready(server, timeout=60)
    return server


def report(
    args: argparse.Namespace, result: dict[str, Any], upstream: dict[str, Any], log: str
) -> int:
    """Print the failures, the log's tail and every check; 0 when every check passed."""
    tally: Tally = result["tally"]
    checks = [
        *growth_checks(result["samples"], args.warmup_intervals),
        request_check(tally),
        drain_check(result["idle_before"], result["drained"], upstream),
        leave_check(tally, upstream),
        log_check(log),
    ]
    print()
    for kind, kept in tally.samples.items():
        print(f"failure samples, {kind} ({tally.total_failed[kind]} in all):")
        for sample in kept:
            print(f"  {sample}")
    if log.strip():
        tail = log.splitlines()[-LOG_LINES_SHOWN:]
        print("server log, last lines:\n" + "\n".join("  " + line for line in tail))
    print(f"fake upstream: {upstream.get('kinds')}; cancelled {upstream.get('cancelled')}")
    for check in checks:
        print(check)
    ok = all(c.ok for c in checks)
    print("PASS" if ok else "FAIL")
    if args.json:
        payload = {
            "args": {k: str(v) for k, v in vars(args).items()},
            "idle_before": asdict(result["idle_before"]),
            "drained": asdict(result["drained"]),
            "samples": [asdict(s) for s in result["samples"]],
            "failures": tally.samples,
            "upstream": {k: v for k, v in upstream.items() if k != "leave_release_ms"},
            "checks": [asdict(c) for c in checks],
            "ok": ok,
        }
        Path(args.json).write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
        print(f"samples written to {args.json}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        progress("interrupted; every server was stopped")
        return 128 + signal.SIGINT
    except Interrupted as exc:
        progress(f"interrupted by {exc}; every server was stopped")
        return 128 + exc.signum


if __name__ == "__main__":
    sys.exit(main())
