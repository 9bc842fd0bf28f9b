"""What sharing state through Redis (`state.backend: redis`) costs against per-process memory,
on a mixed-turn round trip.

    .venv/bin/python bench/state.py                     # table
    .venv/bin/python bench/state.py --rounds 5 --trips 2000 --json out.json

What is measured
----------------
One round trip is the turn replicas must share: the client sends a user message with its
own tool (`lookup_order`); the model (the test suite's fake upstream, scripted) calls both
that tool and the proxy's `demo.calculate`; Toolwire runs `demo.calculate`, keeps the hidden
part of the turn and returns the client's call; the client answers it, and Toolwire puts the
kept part back so the upstream gets a complete history, and the model answers. Two requests,
two upstream calls, one tool run; with Redis, one SET and one MGET (one round trip each).
Both answers are checked (the client's call returned, the final text).

Two `toolwire serve` processes with the same config but `state:` run side by side: one on
memory, one on a redis-server started here (no persistence). Each round measures both, in
batches of `--batch` round trips that alternate between them (a busy machine slows both
alike):

* c=1   `--trips` sequential round trips each (after `--warmup`): p50 of the round trip's
        wall time, and the server's CPU (utime+stime of the process, from /proc) per trip.
* c=N   `--concurrency` clients in a closed loop, `--trips` round trips in all: round trips
        per second and server CPU per trip; for Redis, the redis-server's own CPU per trip too.

The table shows the median over `--rounds` rounds. The ratio redis/memory is taken for CPU
per trip and c=N throughput, and "added ms" is the c=1 p50 difference. With
`os.sched_setaffinity`, the servers run on one CPU and the fake, Redis and this script (the
client, aiohttp) on the other, as in bench/overhead.py, on the same harness.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import uvloop

from testing.upstream import FakeUpstream, Reply

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.cpu import Cpus, cpu_seconds
from bench.harness import (
    EXAMPLE_TOOLS,
    Processes,
    add_no_pin,
    free_port,
    progress,
    toolwire_serve,
    write_config,
    write_json,
)

ANSWER = "Order 7 ships today, and 6 * 7 is 42."
USER = {"role": "user", "content": "Where is order 7, and what is 6 * 7?"}
LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Find an order by its number.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    },
}
TARGETS = ("memory", "redis")


# --------------------------------------------------------------------------- the fake model


def _mixed(body: dict[str, Any]) -> Reply:
    """Both calls for a fresh question, the answer once the tools have spoken."""
    if any(m.get("role") == "tool" for m in body["messages"]):
        return Reply.text(ANSWER)
    return Reply.tool_calls(
        [("demo_calculate", {"expression": "6 * 7"}), ("lookup_order", {"order_id": "7"})]
    )


async def _serve_upstream(port: int) -> None:
    upstream = FakeUpstream(Reply.func(_mixed), port=port)
    upstream.requests = deque(maxlen=8)  # type: ignore[assignment]
    upstream.headers = deque(maxlen=8)  # type: ignore[assignment]
    async with upstream:
        await asyncio.Event().wait()


# --------------------------------------------------------------------------- the client


async def round_trip(session: aiohttp.ClientSession, url: str) -> float:
    """One mixed turn and the client's follow-up; its wall time in seconds.

    Raises:
        RuntimeError: an answer was not the expected one.
    """
    start = time.perf_counter()
    first_body = {"model": "fake-model", "messages": [USER], "tools": [LOOKUP]}
    async with session.post(url, data=orjson.dumps(first_body)) as response:
        first = orjson.loads(await response.read())
    message = first.get("choices", [{}])[0].get("message", {})
    calls = message.get("tool_calls") or []
    if response.status != 200 or [c["function"]["name"] for c in calls] != ["lookup_order"]:
        raise RuntimeError(f"turn: {response.status} {first}")
    call = calls[0]
    history = [
        USER,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": '{"status": "ships today"}'},
    ]
    follow_up = {"model": "fake-model", "messages": history, "tools": [LOOKUP]}
    async with session.post(url, data=orjson.dumps(follow_up)) as response:
        second = orjson.loads(await response.read())
    if response.status != 200 or second["choices"][0]["message"]["content"] != ANSWER:
        raise RuntimeError(f"follow-up: {response.status} {second}")
    return time.perf_counter() - start


async def sequential(url: str, trips: int) -> list[float]:
    async with aiohttp.ClientSession() as session:
        return [await round_trip(session, url) for _ in range(trips)]


async def concurrent(url: str, trips: int, concurrency: int) -> None:
    left = iter(range(trips))
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            for _ in left:
                await round_trip(session, url)

        async with asyncio.TaskGroup() as group:
            for _ in range(concurrency):
                group.create_task(worker())


def _cpu(pid: int) -> float:
    seconds = cpu_seconds(pid)
    if seconds is None:
        raise RuntimeError(f"no CPU figures for process {pid} (/proc)")
    return seconds


@dataclass
class Tally:
    """What one target used over its batches of one round."""

    times: list[float] = field(default_factory=list)
    c1_cpu: float = 0.0
    cN_wall: float = 0.0
    cN_cpu: float = 0.0
    redis_cpu: float = 0.0


def measure(
    args: argparse.Namespace, servers: dict[str, tuple[str, int]], redis_pid: int, first: int
) -> dict[str, dict[str, float]]:
    """One round: c=1 latency and CPU per trip, then c=N throughput and CPU per trip, of each
    target, in batches of `--batch` trips that alternate between the targets, so that what
    else the machine does falls on both alike."""
    tallies = {name: Tally() for name in TARGETS}
    for name in TARGETS:
        uvloop.run(sequential(servers[name][0], args.warmup))
    batches = max(1, args.trips // args.batch)
    for index in range(batches):
        for name in _order(first + index):
            url, pid = servers[name]
            tally, before = tallies[name], _cpu(pid)
            tally.times += uvloop.run(sequential(url, args.batch))
            tally.c1_cpu += _cpu(pid) - before
    for index in range(batches):
        for name in _order(first + index):
            url, pid = servers[name]
            tally, before, redis_before = tallies[name], _cpu(pid), _cpu(redis_pid)
            wall = time.perf_counter()
            uvloop.run(concurrent(url, args.batch, args.concurrency))
            tally.cN_wall += time.perf_counter() - wall
            tally.cN_cpu += _cpu(pid) - before
            tally.redis_cpu += _cpu(redis_pid) - redis_before
    trips = batches * args.batch
    found = {
        name: {
            "c1_p50_ms": statistics.median(t.times) * 1000,
            "c1_cpu_us": t.c1_cpu / trips * 1e6,
            "cN_trips_per_s": trips / t.cN_wall,
            "cN_cpu_us": t.cN_cpu / trips * 1e6,
        }
        for name, t in tallies.items()
    }
    found["redis"]["redis_cpu_us"] = tallies["redis"].redis_cpu / trips * 1e6
    return found


def _order(index: int) -> tuple[str, ...]:
    return TARGETS if index % 2 == 0 else TARGETS[::-1]


# --------------------------------------------------------------------------- the servers


def start_redis(procs: Processes, cpus: Cpus) -> tuple[str, int]:
    """A redis-server on a free port without persistence; its URL and pid."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    command += ["--appendonly", "no", "--dir", str(procs.workdir), "--loglevel", "warning"]
    proc = procs.start("redis", command, cpus.other)
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return f"redis://127.0.0.1:{port}/0", proc.pid
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"redis-server did not start:\n{procs.log_tail('redis')}")
        time.sleep(0.02)


def start_toolwire(
    procs: Processes, cpus: Cpus, name: str, upstream: str, state: dict[str, Any]
) -> tuple[str, int]:
    """`toolwire serve` with the example tools and `state`; its chat URL and pid."""
    config = {
        "upstreams": [{"name": "fake", "base_url": upstream}],
        "tools": [EXAMPLE_TOOLS],
        "state": state,
    }
    path = write_config(procs.workdir / f"{name}.yaml", config)
    server = procs.serve(name, toolwire_serve(path), cpus.server)
    procs.wait_ready(server)
    return f"{server.base}/v1/chat/completions", server.pid


def run(args: argparse.Namespace) -> dict[str, Any]:
    cpus = Cpus.detect(not args.no_pin)
    cpus.pin_self()
    with tempfile.TemporaryDirectory(prefix="toolwire-bench-state-") as folder:
        procs = Processes(Path(folder))
        try:
            # This script serves the scripted fake itself (a hidden option).
            fake = [sys.executable, str(Path(__file__).resolve())]
            upstream = procs.serve("upstream", fake, cpus.other, port_option="--serve-upstream")
            procs.wait_ready(upstream)
            redis_url, redis_pid = start_redis(procs, cpus)
            states = {
                "memory": {"backend": "memory"},
                "redis": {"backend": "redis", "url": redis_url},
            }
            servers = {
                name: start_toolwire(procs, cpus, name, f"{upstream.base}/v1", states[name])
                for name in TARGETS
            }
            rounds: list[dict[str, dict[str, Any]]] = []
            for index in range(args.rounds):
                rounds.append(measure(args, servers, redis_pid, index))
                progress(f"round {index + 1}/{args.rounds} done")
        finally:
            procs.close()
    return summarise(args, cpus, rounds)


# --------------------------------------------------------------------------- the report


def summarise(
    args: argparse.Namespace, cpus: Cpus, rounds: list[dict[str, dict[str, Any]]]
) -> dict[str, Any]:
    medians = {
        name: {key: statistics.median([r[name][key] for r in rounds]) for key in rounds[0][name]}
        for name in TARGETS
    }
    memory, redis = medians["memory"], medians["redis"]
    return {
        "settings": {
            "rounds": args.rounds,
            "trips": args.trips,
            "batch": args.batch,
            "warmup": args.warmup,
            "concurrency": args.concurrency,
            "cpus": cpus.describe(),
            "load_average_1min_at_end": os.getloadavg()[0],
        },
        "medians": medians,
        "redis_over_memory": {
            "c1_cpu_per_trip": redis["c1_cpu_us"] / memory["c1_cpu_us"],
            "cN_cpu_per_trip": redis["cN_cpu_us"] / memory["cN_cpu_us"],
            "cN_trips_per_s": redis["cN_trips_per_s"] / memory["cN_trips_per_s"],
            "c1_p50": redis["c1_p50_ms"] / memory["c1_p50_ms"],
        },
        "added_ms_per_trip_c1_p50": redis["c1_p50_ms"] - memory["c1_p50_ms"],
        "added_cpu_us_per_trip_cN": redis["cN_cpu_us"] - memory["cN_cpu_us"],
        "rounds": rounds,
    }


def render(result: dict[str, Any]) -> str:
    settings, medians = result["settings"], result["medians"]
    n = settings["concurrency"]
    lines = [
        f"Mixed-turn round trip (turn + follow-up), median of {settings['rounds']} rounds of "
        f"{settings['trips']} trips; {settings['cpus']}; load average at the end "
        f"{settings['load_average_1min_at_end']:.1f} (above ~1: a busy machine, noisy figures)",
        "",
        f"{'state':<8} {'c=1 p50 ms':>11} {'c=1 CPU us':>11} {f'c={n} trips/s':>13} "
        f"{f'c={n} CPU us':>12} {'redis-server CPU us':>20}",
    ]
    for name in TARGETS:
        m = medians[name]
        redis_cpu = f"{m['redis_cpu_us']:.0f}" if "redis_cpu_us" in m else "-"
        lines.append(
            f"{name:<8} {m['c1_p50_ms']:>11.2f} {m['c1_cpu_us']:>11.0f} "
            f"{m['cN_trips_per_s']:>13.0f} {m['cN_cpu_us']:>12.0f} {redis_cpu:>20}"
        )
    ratio = result["redis_over_memory"]
    lines += [
        "",
        f"redis/memory: CPU per trip {ratio['c1_cpu_per_trip']:.2f}x (c=1), "
        f"{ratio['cN_cpu_per_trip']:.2f}x (c={n}); trips/s {ratio['cN_trips_per_s']:.2f}x "
        f"(c={n}); p50 {ratio['c1_p50']:.2f}x (c=1)",
        f"added per round trip: {result['added_ms_per_trip_c1_p50']:+.2f} ms (c=1 p50), "
        f"{result['added_cpu_us_per_trip_cN']:+.0f} us of Toolwire CPU (c={n})",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trips", type=int, default=1000, help="round trips per measurement")
    parser.add_argument("--warmup", type=int, default=30, help="c=1 round trips not counted")
    parser.add_argument("--batch", type=int, default=100, help="trips before switching target")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--json", metavar="PATH", help="also write every number as JSON")
    add_no_pin(parser)
    parser.add_argument("--serve-upstream", type=int, metavar="PORT", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_upstream is not None:
        uvloop.run(_serve_upstream(args.serve_upstream))
        return 0
    result = run(args)
    print(render(result))
    if args.json:
        write_json(Path(args.json), result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
