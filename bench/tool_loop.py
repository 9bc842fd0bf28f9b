"""What Toolwire adds to a tool loop, against calling the model and the tool directly, and LiteLLM.

    sh bench/setup_litellm.sh                        # once: LiteLLM's proxy in its own venv
    .venv/bin/python bench/tool_loop.py              # table + PASS/MISS goal lines
    .venv/bin/python bench/tool_loop.py --json out.json --rounds 1 --duration 3
    .venv/bin/python bench/tool_loop.py --no-litellm --kinds python-thread --toolwire-tree ../before

What is measured
----------------
Every request makes one tool call and then answers: the model (`bench/loop_upstream.py`, the
test suite's fake upstream, scripted) answers the question with a call of the one tool it is
offered, and, once the tool's result is in the messages, with text quoting that result. The
client checks the answer quotes the tool's result. The same tool (`echo`) comes five ways:

* python         `bench/loop_tools.py` as a Python source (the default execution mode): it
                 only returns an f-string of its argument, so it runs inline on the event
                 loop (`registry/bounded.py`)
* python-thread  `bench/loop_thread_tools.py`: the same work through a call (`str.join`), so
                 it runs in the executor's thread pool, as a real tool that calls anything does
* mcp-stdio      `bench/loop_mcp_server.py` (the mcp SDK's MCPServer) over stdio, spawned by
                 the proxy
* mcp-http       the same server over Streamable HTTP, one process shared by every client
* openapi        `bench/loop_openapi_service.py` (aiohttp) and its OpenAPI document

Targets, per tool:

* direct    this process makes the three steps itself (model, tool, model): the model asked
            directly and the tool called directly (the function in-process, inline for both
            Python kinds, so python-thread's "+iter" includes the thread hand-off; an mcp
            `ClientSession`, an aiohttp POST). Its time is the model and tool time.
* toolwire  `toolwire serve` with that one tool source, the fake as upstream; one request.
* litellm   LiteLLM's proxy (pinned, `bench/setup_litellm.sh`), the same fake as its model and
            the same MCP server (stdio and Streamable HTTP) and REST service (`spec_path`) in its
            `mcp_servers`, sent `/v1/chat/completions` with a tool `{"type": "mcp",
            "server_url": "litellm_proxy/mcp/<server>", "require_approval": "never"}`, which
            LiteLLM runs itself (one tool round, then one follow-up call). No Python tool rows:
            LiteLLM has no in-process tool source.

c=1: `--requests` sequential requests after `--warmup-requests`, each phase cut at `--budget`
seconds (p50, p99); "+iter" is the p50 minus the direct loop's p50 in the same round (median
over rounds): the latency the proxy adds to an iteration (model, tool, model) beyond model and
tool time. c=32: a closed loop for `--duration` s after `--warmup` s: req/s, and the proxy
process's CPU per request (from /proc; a stdio server it spawned is not counted); after it,
the next target waits until the proxy, its children and the shared servers are idle again (the
calls cut off at the end may still run). Goals (issue 29), each printed PASS or MISS with its
spread over rounds, in the JSON under "goals" (bench/goals.py's table, as bench/overhead.py's):
toolwire "+iter" <= 1 ms for every tool kind, measured against the direct loop of the same
run, and LiteLLM's "+iter" on its MCP paths >= 100x Toolwire's. The load average at the start
is recorded; above 1 the table says its verdicts are not reliable.

Method: servers are child processes on ephemeral loopback ports, killed (process group) in a
`finally`. Each round measures every tool's direct and toolwire rows (their order rotated from
round to round), then the LiteLLM rows, its stdio row last: LiteLLM's stdio path at c=32 starts
dozens of servers and slows the machine and the shared MCP server for a while after. With 2
CPUs, the proxies run on CPU A (a stdio MCP server a proxy spawns too), and the fake model, the
MCP HTTP server, the REST service, this client and the direct loop's stdio server on CPU B.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import aiohttp
import uvloop

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench import goals, loop_thread_tools
from bench import loop_clients as clients
from bench.cpu import Cpus, cpu_seconds, tree_cpu_seconds
from bench.goals import Goal, load_average
from bench.harness import (
    Processes,
    add_json,
    add_no_pin,
    add_toolwire_tree,
    bench_main,
    check_trees,
    median,
    progress,
)
from bench.loop_load import run_load, run_sequence
from bench.loop_servers import LITELLM_KEY, LITELLM_SERVERS, Servers, start_servers, stop_marked

KINDS = ("python", "python-thread", "mcp-stdio", "mcp-http", "openapi")
TARGETS = ("direct", "toolwire", "litellm")
ITER_GOAL_MS = 1.0
LITELLM_GOAL = 100.0


# --------------------------------------------------------------------------- measuring


async def measure(args: argparse.Namespace, servers: Servers) -> list[dict[str, Any]]:
    """Every round: per tool kind, every target at c=1 then at c=concurrency."""
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    timeout = aiohttp.ClientTimeout(total=120)
    rounds: list[dict[str, Any]] = []
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(
            aiohttp.ClientSession(connector=connector, timeout=timeout)
        )
        tools: dict[str, clients.ToolCall] = {
            "python": clients.python_tool,
            "python-thread": python_thread_tool,
            "mcp-stdio": await clients.mcp_stdio_tool(stack),
            "mcp-http": await clients.mcp_http_tool(stack, servers.mcp_url),
            "openapi": clients.openapi_tool(http, servers.rest),
        }
        for index in range(args.rounds):
            this: dict[str, Any] = {kind: {} for kind in args.kinds}
            # LiteLLM last in every round: its stdio path at c=32 spawns dozens of servers
            # and leaves the machine (and the shared MCP server) slower for a while after.
            for late in (False, True):
                # And its stdio row last of its rows, for the same reason.
                kinds = sorted(args.kinds, key=lambda k: late and k == "mcp-stdio")
                for kind in kinds:
                    calls = _calls(kind, http, servers, tools[kind])
                    order = [t for t in calls if (t == "litellm") == late]
                    shift = index % max(1, len(order))
                    for target in order[shift:] + order[:shift]:
                        progress(f"round {index + 1}/{args.rounds} {kind:<9} {target}")
                        call, pid = calls[target]
                        this[kind][target] = await _measure_one(args, call, pid)
                        if target == "litellm" and pid:
                            await quiet_litellm(pid, args.run_mark)
                        # Calls cut off at the end of the c=32 window may still run in the
                        # proxy, its stdio children or a shared server: let them end first.
                        await settle([*servers.shared, *([pid] if pid else [])])
            rounds.append(this)
    return rounds


async def python_thread_tool(text: str) -> str:
    """The python-thread kind's tool, called in this process (as `clients.python_tool`)."""
    return loop_thread_tools.echo(text)


def _calls(
    kind: str, http: aiohttp.ClientSession, servers: Servers, tool: clients.ToolCall
) -> dict[str, tuple[Callable[[], Awaitable[str | None]], int | None]]:
    out: dict[str, tuple[Callable[[], Awaitable[str | None]], int | None]] = {
        "direct": (clients.DirectLoop(http, servers.upstream, tool), None),
    }
    url, pid = servers.toolwire[kind]
    out["toolwire"] = (clients.ProxyClient(http, url, {}), pid)
    for label, by_kind in servers.trees.items():
        url, pid = by_kind[kind]
        out[f"toolwire{label}"] = (clients.ProxyClient(http, url, {}), pid)
    if servers.litellm is not None and kind in LITELLM_SERVERS:
        url, pid = servers.litellm
        mcp_tool = {
            "type": "mcp",
            "server_label": "litellm",
            "server_url": f"litellm_proxy/mcp/{LITELLM_SERVERS[kind]}",
            "require_approval": "never",
            "headers": {"x-litellm-api-key": f"Bearer {LITELLM_KEY}"},
        }
        client = clients.ProxyClient(http, url, {"tools": [mcp_tool]}, key=LITELLM_KEY)
        out["litellm"] = (client, pid)
    return out


async def _measure_one(
    args: argparse.Namespace, call: Callable[[], Awaitable[str | None]], pid: int | None
) -> dict[str, Any]:
    seq = await run_sequence(call, args.requests, args.warmup_requests, args.budget)
    before = cpu_seconds(pid) if pid else None
    load = await run_load(call, args.concurrency, args.warmup, args.duration)
    after = cpu_seconds(pid) if pid else None
    summary = load.summary()
    cpu = None if before is None or after is None else after - before
    return {
        "c1": seq.summary(),
        "load": summary,
        "cpu_us_per_req": cpu * 1e6 / summary["ok"] if cpu is not None and summary["ok"] else None,
    }


async def settle(pids: list[int], limit_s: float = 60.0) -> None:
    """Wait until these processes and their children are idle again (< 10% of a core over
    0.5 s), so the requests the load runner cancelled do not slow the next target down."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        before = sum(tree_cpu_seconds(pid) for pid in pids)
        await asyncio.sleep(0.5)
        if sum(tree_cpu_seconds(pid) for pid in pids) - before < 0.05:
            return


async def quiet_litellm(pid: int, run_mark: str, limit_s: float = 120.0) -> None:
    """Until LiteLLM is idle with no stdio server of its own left: it goes on with the calls
    cut off at the end of the window, starting a server (a second of CPU) for each."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        before = tree_cpu_seconds(pid)
        killed = stop_marked(pid, run_mark)
        await asyncio.sleep(0.5)
        if not killed and tree_cpu_seconds(pid) - before < 0.025:
            return


def summarise(rounds: list[dict[str, Any]], kinds: list[str]) -> dict[str, Any]:
    """Medians over rounds per tool kind and target, and the added latency per iteration."""
    out: dict[str, Any] = {}
    for kind in kinds:
        targets = sorted(rounds[0][kind], key=_target_order)
        rows: dict[str, Any] = {}
        for target in targets:
            runs = [r[kind][target] for r in rounds]
            pairs = [(r[kind][target], r[kind]["direct"]) for r in rounds]
            added = [x["c1"]["p50_ms"] - d["c1"]["p50_ms"] for x, d in pairs]
            rows[target] = {
                "p50_ms": median([x["c1"]["p50_ms"] for x in runs]),
                "p99_ms": median([x["c1"]["p99_ms"] for x in runs]),
                "added_ms": median(added),
                "added_rounds": added,
                "rps": median([x["load"]["rps"] for x in runs]),
                "load_p50_ms": median([x["load"]["p50_ms"] for x in runs]),
                "cpu_us_per_req": median([x["cpu_us_per_req"] for x in runs]),
                "errors": sum(x["c1"]["errors"] + x["load"]["errors"] for x in runs),
                "error_samples": [
                    s for x in runs for s in x["c1"]["error_samples"] + x["load"]["error_samples"]
                ][:5],
            }
        rows["direct"]["added_ms"] = 0.0
        rows["direct"]["added_rounds"] = [0.0] * len(rounds)
        out[kind] = rows
    return out


def _target_order(target: str) -> tuple[int, str]:
    """direct, toolwire, the toolwire of each other tree (`toolwire@<commit>`), LiteLLM."""
    return TARGETS.index(target.split("@")[0]), target


# --------------------------------------------------------------------------- report


def _f(value: float | None, digits: int = 2, width: int = 9) -> str:
    if value is None or value != value:  # None or NaN
        return f"{'-':>{width}}"
    if abs(value) >= 1000:
        digits = 0
    elif abs(value) >= 100:
        digits = min(digits, 1)
    return f"{value:>{width}.{digits}f}"


def goal_summary(result: dict[str, Any]) -> dict[str, Any]:
    """The goals with their verdicts and the run's load (JSON): per tool kind, Toolwire's
    added latency per iteration (its c=1 p50 minus the direct loop's of the same round, the
    model and tool time) at most `ITER_GOAL_MS`; on the MCP paths, LiteLLM's at least
    `LITELLM_GOAL` times Toolwire's."""
    summary = result["summary"]
    found = []
    for kind, rows in summary.items():
        tw = rows["toolwire"]
        found.append(
            Goal(
                f"iteration_{kind}",
                f"{kind}: toolwire adds per iteration beyond model and tool time",
                tw["added_ms"],
                "<=",
                ITER_GOAL_MS,
                unit="ms",
                rounds=tw.get("added_rounds", ()),
                errors=tw["errors"],
                detail=f"direct loop p50 {rows['direct']['p50_ms']:.2f} ms",
            )
        )
    for kind, rows in summary.items():
        if "litellm" not in rows or not kind.startswith("mcp"):
            continue
        c = result["meta"]["concurrency"]
        rps = _ratio(rows["toolwire"]["rps"], rows["litellm"]["rps"])
        rps_text = f"{rps:.1f}x" if rps == rps else "- (LiteLLM answered none in the window)"
        found.append(
            Goal(
                f"litellm_{kind}",
                f"{kind}: LiteLLM's added latency over toolwire's",
                litellm_ratio(rows),
                ">=",
                LITELLM_GOAL,
                errors=rows["toolwire"]["errors"],
                detail=f"LiteLLM adds {rows['litellm']['added_ms']:.1f} ms; "
                f"c={c} req/s toolwire/LiteLLM {rps_text}",
            )
        )
    return goals.summary(found, result["meta"].get("load_average_start"))


def goal_lines(result: dict[str, Any]) -> list[str]:
    """The goal table: PASS or MISS per goal (issue 29)."""
    summary = result.get("goals") or goal_summary(result)
    return goals.table(summary, "Goals (issue 29): the tool loop")


def litellm_ratio(rows: dict[str, Any]) -> float:
    """LiteLLM's added latency over Toolwire's (Toolwire's floored at 0.01 ms, noise below)."""
    return float(rows["litellm"]["added_ms"]) / max(float(rows["toolwire"]["added_ms"]), 0.01)


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def render(result: dict[str, Any]) -> str:
    meta = result["meta"]
    c = meta["concurrency"]
    width = max(9, *(len(t) + 1 for rows in result["summary"].values() for t in rows))
    lines = [
        f"Tool loop (model -> tool -> model per request): median of {meta['rounds']} rounds; "
        f"c=1: {meta['requests']} requests; c={c}: {meta['duration']:g} s after "
        f"{meta['warmup']:g} s",
        f"pinning: {meta['pinning']}; {meta['litellm']}",
        "times in ms; +iter = p50 minus the direct loop's p50 (model + tool time), same round; "
        "us/rq = the proxy process's CPU per request at c=" + str(c),
        "",
        f"  {'tool':<14}{'target':<{width}}{'p50':>9}{'p99':>9}{'+iter':>9} |"
        f"{f'c={c} req/s':>12}{'p50':>9}{'us/rq':>9}{'errors':>7}",
    ]
    for kind, rows in result["summary"].items():
        for target, row in rows.items():
            mark = "!" if row["errors"] else " "
            added = f"{'-':>9}" if target == "direct" else _f(row["added_ms"])
            rps = row["rps"]
            lines.append(
                f"{mark} {kind:<14}{target:<{width}}{_f(row['p50_ms'])}{_f(row['p99_ms'])}{added} |"
                f"{_f(rps, 1 if rps == rps and rps < 10 else 0, 12)}{_f(row['load_p50_ms'])}"
                f"{_f(row['cpu_us_per_req'], 0)}{row['errors']:>7}"
            )
    lines.append("")
    lines += goal_lines(result)
    for kind, rows in result["summary"].items():
        for target, row in rows.items():
            if not row["rps"] and not row["errors"]:
                lines.append(
                    f"NOTE  {kind} {target}: no request ended within the c={c} window "
                    f"({meta['duration']:g} s), so its req/s is 0"
                )
            if row["errors"]:
                lines.append(f"ERRORS {kind} {target}: {row['errors']}")
                lines += [f"    {sample}" for sample in row["error_samples"]]
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Tool-loop latency and throughput: Toolwire vs direct calls vs LiteLLM.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--rounds", type=int, default=3, help="repeats; medians are reported")
    parser.add_argument("--requests", type=int, default=200, help="c=1 requests per target")
    parser.add_argument("--warmup-requests", type=int, default=20, help="c=1 warm-up requests")
    parser.add_argument(
        "--budget",
        type=float,
        default=20.0,
        help="seconds at most for each c=1 phase (warm-up, counted) of a target; 3 requests "
        "at least (LiteLLM's stdio path takes seconds per request)",
    )
    parser.add_argument("--concurrency", type=int, default=32, help="callers for req/s")
    parser.add_argument("--duration", type=float, default=5.0, help="counted seconds at c=32")
    parser.add_argument("--warmup", type=float, default=1.0, help="uncounted seconds at c=32")
    parser.add_argument(
        "--kinds",
        type=_kinds,
        default=list(KINDS),
        metavar="KIND[,KIND]",
        help="tool kinds: " + ", ".join(KINDS),
    )
    parser.add_argument("--no-litellm", action="store_true", help="leave LiteLLM out")
    add_toolwire_tree(
        parser,
        "also measure the toolwire of another source tree (a git checkout): a row "
        "toolwire@<commit> per kind, in the same rounds (repeatable)",
    )
    add_no_pin(parser)
    add_json(parser)
    args = parser.parse_args(argv)
    args.toolwire_tree = check_trees(parser, args.toolwire_tree)
    return args


def _kinds(value: str) -> list[str]:
    kinds = [k.strip() for k in value.split(",") if k.strip()]
    if not kinds or any(k not in KINDS for k in kinds):
        raise argparse.ArgumentTypeError(f"one or more of {', '.join(KINDS)}")
    return kinds


def run(args: argparse.Namespace) -> dict[str, Any]:
    args.run_mark = uuid.uuid4().hex
    load = load_average()
    cpus = Cpus.detect(not args.no_pin)
    cpus.pin_self()
    with tempfile.TemporaryDirectory(prefix="toolwire-loop-") as tmp:
        procs = Processes(Path(tmp))
        servers: Servers | None = None
        try:
            progress("starting servers ...")
            servers = start_servers(args, procs, cpus, Path(tmp))
            progress(servers.litellm_note)
            rounds = uvloop.run(measure(args, servers))
        finally:
            litellm = servers.litellm if servers is not None else None
            if litellm is not None:
                stop_marked(litellm[1], args.run_mark)
            procs.close()
            if litellm is not None:
                # LiteLLM starts servers again while it shuts down.
                stop_marked(litellm[1], args.run_mark)
    meta = {
        "rounds": args.rounds,
        "requests": args.requests,
        "warmup_requests": args.warmup_requests,
        "concurrency": args.concurrency,
        "duration": args.duration,
        "warmup": args.warmup,
        "kinds": args.kinds,
        "toolwire_trees": [str(tree) for tree in args.toolwire_tree],
        "pinning": cpus.describe(),
        "litellm": servers.litellm_note,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "wrk": shutil.which("wrk") is not None,
        "load_average_start": load,
        "load_average_end": load_average(),
    }
    result = {"meta": meta, "summary": summarise(rounds, args.kinds), "rounds": rounds}
    result["goals"] = goal_summary(result)
    return result


def main(argv: list[str] | None = None) -> int:
    return bench_main(argv, parse_args, run, render)


if __name__ == "__main__":
    sys.exit(main())
