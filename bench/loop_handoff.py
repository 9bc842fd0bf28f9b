"""What handing a sync tool's call to the thread pool costs: `ThreadBackend.run` against
`InlineBackend.run`, in this process, on one CPU.

    .venv/bin/python bench/loop_handoff.py                 # 20,000 calls each, pinned
    .venv/bin/python bench/loop_handoff.py --calls 50000 --cpu 1

The tool is `bench/loop_thread_tools.py`'s `echo` (the `python-thread` kind of
`bench/tool_loop.py`), run under uvloop as `toolwire serve` runs it, pinned to one CPU as the
tool-loop bench pins the proxy. Calls alternate between the two backends in blocks, so a
change in the machine's load touches both. Per backend: the p50 and p90 of one awaited call,
and the context switches per call (`getrusage`, every thread of this process: not moved by
other programs' load, unlike the times).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import uvloop

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench import loop_thread_tools
from bench.harness import percentile
from registry import InlineBackend, ThreadBackend, Tool
from registry.thread_pool import DaemonThreadPool

BLOCKS = 20


def _switches() -> int:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw + usage.ru_nivcsw


async def measure(calls: int) -> dict[str, dict[str, float]]:
    """Per backend: p50 and p90 (µs) of one call, and context switches per call."""
    tool = Tool.from_function(loop_thread_tools.echo)
    pool = DaemonThreadPool(16)
    backends: dict[str, Any] = {"inline": InlineBackend(), "thread": ThreadBackend(pool)}
    times: dict[str, list[float]] = {name: [] for name in backends}
    switches = dict.fromkeys(backends, 0)
    arguments = {"text": "hi"}
    try:
        for backend in backends.values():  # warm-up: the pool's thread started
            for _ in range(200):
                await backend.run(tool, arguments)
        for _ in range(BLOCKS):
            for name, backend in backends.items():
                run, kept = backend.run, times[name]
                before = _switches()
                for _ in range(calls // BLOCKS):
                    started = time.perf_counter()
                    await run(tool, arguments)
                    kept.append((time.perf_counter() - started) * 1e6)
                switches[name] += _switches() - before
    finally:
        pool.shutdown(wait=False)
    return {
        name: {
            "p50_us": percentile(kept, 50),
            "p90_us": percentile(kept, 90),
            "switches_per_call": switches[name] / len(kept),
        }
        for name, kept in times.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000, help="calls per backend")
    parser.add_argument("--cpu", type=int, default=0, help="the CPU to pin to (-1: none)")
    args = parser.parse_args(argv)
    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    found = uvloop.run(measure(args.calls))
    where = "not pinned" if args.cpu < 0 else f"pinned to CPU {args.cpu}"
    print(f"{args.calls} calls per backend, {where}, load {os.getloadavg()[0]:.2f}")
    for name, row in found.items():
        print(
            f"  {name:<7} p50 {row['p50_us']:6.1f} us  p90 {row['p90_us']:6.1f} us  "
            f"{row['switches_per_call']:5.2f} context switches per call"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
