"""Instructions per request: Toolwire against the pass-through, counted, not timed.

CPU time per request (bench/overhead.py) is the figure users feel, but on a shared or
virtual machine it moves a lot from run to run. An instruction count hardly does: each
server runs under valgrind's callgrind with counting switched on only around a fixed number
of sequential requests (after a warm-up), so two runs of the same commit agree closely
whatever else the machine does. Use it to compare commits and to check the
ratio to the pass-through; use overhead.py for the absolute figures.

    .venv/bin/python bench/instructions.py                  # chat, unstreamed and streamed
    .venv/bin/python bench/instructions.py --toolwire-tree ../old   # also an older tree
    .venv/bin/python bench/instructions.py --flow tool-loop         # one tool round per request
    .venv/bin/python bench/instructions.py --goal-tree ../at-134e72f  # PASS/MISS against it
    .venv/bin/python bench/instructions.py --requests 640 --concurrency 64  # 64 in flight

`--concurrency N` keeps N requests in flight (one connection each) instead of one at a time:
what a request costs with N others alive in the server, as under bench/overhead.py's load.

`--goal-tree DIR` counts DIR's toolwire too and prints PASS or MISS for this tree's count at
or below DIR's (issue 29's goal: DIR a worktree of 134e72f, `git worktree add DIR 134e72f`).

`--flow tool-loop` counts requests that each make one tool call and then answer
(bench/tool_loop.py's model and tool, unstreamed): what a tool round costs, for A/B between
trees; a pass-through cannot run tools, so that flow has no pass-through row. `--kind` picks
the tool's source as in bench/tool_loop.py (python, python-thread, mcp-stdio, mcp-http,
openapi; the MCP and REST servers are not counted, a stdio server's process neither: only
the proxy's).

Every server logs at warning, so that the count is the request's work alone; `--log-level
info` runs the toolwire servers at `toolwire serve`'s default instead, which adds each
request's summary line (and whatever else is logged at info) to their counts.

The plain flow also counts the injecting floor (`bench/passthrough.py --inject-tools`, see
bench/overhead.py): the pass-through plus the least work a tool-injecting proxy must do.
Both run on `toolwire serve`'s stack (its HTTP protocol, `proxy/server/http_wire.py`, and its
upstream client, `registry/http1/`), so what separates them from Toolwire is Toolwire's own
work. `--reference-client aiohttp` counts them on the earlier stack instead (aiohttp on
uvicorn's own protocol), the reference of the counts taken before Toolwire had a client and
a protocol of its own; `--reference-client both` counts them on both.

Needs `valgrind` (Debian package); servers run many times slower under it, so a run takes
minutes. Verdict: Toolwire within 1.3x the injecting floor's instructions (issue 29's CPU
goal, counted; without the floor, issue 16's 1.15x the pass-through's).

`--valgrind-option=OPT` (repeatable) passes OPT to valgrind: `--valgrind-option=--cache-sim=yes`
(and `--valgrind-option=--branch-sim=yes`) has callgrind simulate the caches (and the branch
predictor), so that the dumps `--keep DIR` keeps hold each function's D1 and LL misses (and
mispredictions) beside its instructions, for `callgrind_annotate --show=Ir,D1mr,D1mw,DLmr,DLmw`;
the counts printed stay the instructions.

A server of another tree (`--toolwire-tree DIR`) is started by its command, `python -m proxy
serve`, in DIR and importing from it, so a tree of an older layout runs as it was.
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.harness import (
    EXAMPLE_TOOLS,
    Processes,
    Server,
    add_toolwire_tree,
    check_trees,
    injected_tools,
    script,
    terminate_on_sigterm,
    toolwire_serve,
    tree_label,
    upstream_command,
    write_config,
    write_json,
)
from bench.loop_clients import QUESTION, check_answer
from bench.loop_servers import toolwire_source
from bench.overhead_targets import reference_stack
from bench.trees import tree_tools
from bench.workload import TEXT, request_body

GOAL = 1.15
"""Issue 16's goal: toolwire within 1.15x the pass-through (runs without a floor)."""
FLOOR_GOAL = 1.3
"""Issue 29's CPU goal, read in instructions: toolwire within 1.3x the injecting floor."""
MODES = ("json", "stream")
FLOWS = ("plain", "tool-loop")
KINDS = ("python", "python-thread", "mcp-stdio", "mcp-http", "openapi")


@dataclass
class Counted:
    """One server to count under callgrind: its command (`--port` is added) and tree."""

    key: str
    label: str
    cmd: list[str]
    tree: Path | None = None
    server: Server | None = None
    out: Path | None = None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Instructions per request of Toolwire vs a pass-through (callgrind).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--requests", type=int, default=200, help="counted requests per mode")
    parser.add_argument("--warmup", type=int, default=30, help="uncounted requests per mode")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=1,
        metavar="N",
        help="requests kept in flight, each on its own connection (N > 1: what a request "
        "costs with N others alive, as under load, which one at a time does not show)",
    )
    add_toolwire_tree(parser, "also count toolwire from another source tree (e.g. a git worktree)")
    parser.add_argument(
        "--goal-tree", type=Path, metavar="DIR", help="the goal: at or below DIR's count"
    )
    parser.add_argument("--flow", choices=FLOWS, default="plain", help="what each request does")
    parser.add_argument(
        "--reference-client",
        choices=("http1", "aiohttp", "both"),
        default="http1",
        help="the pass-through's and the floor's upstream client: Toolwire's own (the same "
        "stack), aiohttp (the reference of earlier counts), or both (aiohttp's rows added)",
    )
    parser.add_argument(
        "--same-client",
        dest="reference_client",
        action="store_const",
        const="both",
        help="--reference-client both (the spelling of earlier runs)",
    )
    parser.add_argument(
        "--kind", choices=KINDS, default="python", help="the tool's source (--flow tool-loop)"
    )
    parser.add_argument(
        "--log-level",
        choices=("warning", "info"),
        default="warning",
        help="the toolwire servers' log level (info: with the summary line per request)",
    )
    parser.add_argument("--start-timeout", type=float, default=600, help="seconds to start")
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="keep each server's callgrind dumps in DIR (KEY.MODE.PID[.N].callgrind) for "
        "callgrind_annotate: where the instructions go, by C function",
    )
    parser.add_argument(
        "--valgrind-option",
        action="append",
        default=[],
        metavar="OPT",
        help="pass OPT to valgrind (repeatable; spelled with `=`), e.g. "
        "--valgrind-option=--cache-sim=yes: the "
        "dumps --keep keeps then hold D1/LL misses (and branch mispredictions with "
        "--branch-sim=yes) for callgrind_annotate --show",
    )
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON to PATH")
    args = parser.parse_args(argv)
    args.toolwire_tree = check_trees(parser, args.toolwire_tree)
    if args.goal_tree is not None:
        args.goal_tree = check_trees(parser, [args.goal_tree])[0]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="toolwire-instr-") as tmp, terminate_on_sigterm():
        procs = Processes(Path(tmp))
        try:
            upstream = _start_upstream(procs, args.flow)
            tools = _tool_source(args, procs) if args.flow == "tool-loop" else EXAMPLE_TOOLS
            counted = _servers(args, procs.workdir, f"{upstream.base}/v1", tools)
            result = _count_all(args, procs, counted)
        finally:
            procs.close()
    print(render(result))
    if args.json:
        write_json(Path(args.json), result)
    return 0


def _start_upstream(procs: Processes, flow: str = "plain") -> Server:
    cmd = script("loop_upstream.py") if flow == "tool-loop" else upstream_command()
    upstream = procs.serve("upstream", cmd, None)
    procs.wait_ready(upstream, timeout=30, probe=2)
    return upstream


def _tool_source(args: argparse.Namespace, procs: Processes) -> dict[str, Any]:
    """The tool-loop flow's one source (bench/tool_loop.py's), its servers started here."""
    if args.kind in ("python", "python-thread"):
        return {**toolwire_source(args.kind, "", ""), "namespace": "demo"}
    mcp_url = rest = ""
    if args.kind == "mcp-http":
        mcp = procs.serve("mcp", script("loop_mcp_server.py"), None, port_option="--http")
        procs.wait_port(mcp)
        mcp_url = f"{mcp.base}/mcp"
    elif args.kind == "openapi":
        service = procs.serve("rest", script("loop_openapi_service.py"), None)
        procs.wait_ready(service, "/openapi.json", timeout=60)
        rest = service.base
    return toolwire_source(args.kind, mcp_url, rest)


def _servers(
    args: argparse.Namespace, workdir: Path, url: str, tools: dict[str, Any]
) -> list[Counted]:
    config = {
        "server": {"host": "127.0.0.1"},
        "upstreams": [{"name": "fake", "base_url": url}],
        "tools": [tools],
    }
    path = write_config(workdir / "toolwire.yaml", config)
    # Every server logs at warning, as in bench/overhead.py: at toolwire's default (info) its
    # per-request summary line would be counted, and the pass-through writes none; toolwire's
    # servers log at info with `--log-level info`, to count that line.
    passthrough = script("passthrough.py", "--upstream", url, "--log-level", "warning")
    level = args.log_level
    counted = [Counted("toolwire", "toolwire", toolwire_serve(path, log_level=level))]
    if args.flow == "plain":
        inject = ["--inject-tools", str(injected_tools(path, workdir))]
        first = "aiohttp" if args.reference_client == "aiohttp" else "http1"
        main = [*passthrough, *reference_stack(first)]
        counted.insert(0, Counted("passthrough", f"pass-through ({first})", main))
        counted.insert(1, Counted("floor", f"injecting floor ({first})", [*main, *inject]))
        if args.reference_client == "both":
            other = [*passthrough, *reference_stack("aiohttp")]
            counted.insert(2, Counted("passthrough_aiohttp", "pass-through (aiohttp)", other))
            floor = Counted("floor_aiohttp", "injecting floor (aiohttp)", [*other, *inject])
            counted.insert(3, floor)
    for index, tree in enumerate(args.toolwire_tree, 1):
        own = _tree_config(config, tree, workdir, f"tree{index}")
        cmd = toolwire_serve(own, tree=tree, log_level=level)
        label = f"toolwire {tree_label(tree)}"
        counted.append(Counted(f"toolwire_tree{index}", label, cmd, tree))
    if args.goal_tree is not None:
        label = f"toolwire {tree_label(args.goal_tree)} (goal)"
        goal = _tree_config(config, args.goal_tree, workdir, "goal")
        counted.append(
            Counted(
                "goal",
                label,
                toolwire_serve(goal, tree=args.goal_tree, log_level=level),
                args.goal_tree,
            )
        )
    return counted


def _tree_config(config: dict[str, Any], tree: Path, workdir: Path, name: str) -> Path:
    """The config of another tree's server: its own copy of a Python tool source."""
    own = {**config, "tools": tree_tools(config["tools"], tree)}
    return write_config(workdir / f"toolwire-{name}.yaml", own)


def _count_all(
    args: argparse.Namespace, procs: Processes, counted: list[Counted]
) -> dict[str, Any]:
    modes = MODES if args.flow == "plain" else ("json",)
    bodies = {mode: _body(args.flow, mode == "stream") for mode in modes}
    counts: dict[str, dict[str, float]] = {}
    for one in counted:
        counts[one.key] = {}
        for mode in modes:
            # A fresh process per mode: the counts of one never include the other's.
            _start(procs, one, mode, args.start_timeout, args.valgrind_option)
            try:
                counts[one.key][mode] = _count(one, bodies[mode], args)
            finally:
                assert one.server is not None
                procs.end(one.server.proc, signal.SIGKILL)
    return {
        "flow": args.flow,
        **({"kind": args.kind} if args.flow == "tool-loop" else {}),
        "requests": args.requests,
        "concurrency": args.concurrency,
        "labels": {one.key: one.label for one in counted},
        "instructions": counts,
        "goal": GOAL,
        "floor_goal": FLOOR_GOAL,
        "goal_key": "goal" if "goal" in counts else None,
    }


def _body(flow: str, stream: bool) -> bytes:
    if flow == "tool-loop":
        return orjson.dumps({"model": "fake-model", "messages": QUESTION})
    return orjson.dumps(request_body(stream))


def _start(
    procs: Processes, one: Counted, mode: str, timeout: float, options: list[str] | None = None
) -> None:
    """The server under callgrind, counting off until the warm-up is done; `options`: more
    of valgrind's."""
    one.out = procs.workdir / f"callgrind.{one.key}.{mode}"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", *(options or ())]
    cmd += [f"--callgrind-out-file={one.out}.%p", *one.cmd]
    one.server = procs.serve(one.key, cmd, None, tree=one.tree)
    procs.wait_ready(one.server, timeout=timeout, probe=2)


def _count(one: Counted, body: bytes, args: argparse.Namespace) -> float:
    """Instructions per request over `args.requests` sequential requests."""
    assert one.server is not None and one.out is not None
    port = int(one.server.base.rsplit(":", 1)[1])
    _post_all(port, body, args.warmup, args.concurrency)
    _control(one.server.pid, "-i", "on")
    _post_all(port, body, args.requests, args.concurrency)
    _control(one.server.pid, "-d")
    total = 0
    for _ in range(100):
        dumps = list(one.out.parent.glob(f"{one.out.name}.*"))
        total = sum(_totals(path) for path in dumps)
        if total:
            break
        time.sleep(0.1)
    if not total:
        raise RuntimeError(f"no callgrind dump from {one.label}")
    for path in one.out.parent.glob(f"{one.out.name}.*"):
        if args.keep is None:
            path.unlink()
        else:
            args.keep.mkdir(parents=True, exist_ok=True)
            shutil.move(path, args.keep / f"{path.name.removeprefix('callgrind.')}.callgrind")
    return total / args.requests


def _control(pid: int, *options: str) -> None:
    subprocess.run(["callgrind_control", *options, str(pid)], check=True, capture_output=True)


def _totals(path: Path) -> int:
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    return 0


def _post_all(port: int, body: bytes, count: int, concurrency: int) -> None:
    """`count` requests, `concurrency` of them in flight at a time (one connection each)."""
    if concurrency <= 1:
        _post(port, body, count)
        return
    shares = [count // concurrency + (i < count % concurrency) for i in range(concurrency)]
    with ThreadPoolExecutor(concurrency) as pool:
        for done in [pool.submit(_post, port, body, share) for share in shares if share]:
            done.result()


def _post(port: int, body: bytes, count: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        for _ in range(count):
            conn.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
            response = conn.getresponse()
            data = response.read()
            if response.status != 200 or not _expected(data):
                raise RuntimeError(f"bad answer {response.status}: {data[:200]!r}")
    finally:
        conn.close()


def _expected(data: bytes) -> bool:
    """The plain flow's text, or the tool loop's answer quoting the tool's result."""
    return TEXT.split()[0].encode() in data or check_answer(200, data) is None


def _how_many(result: dict[str, Any]) -> str:
    """`200 sequential requests`, or `200 requests, 64 in flight`."""
    concurrency = result.get("concurrency", 1)
    if concurrency <= 1:
        return f"{result['requests']} sequential requests"
    return f"{result['requests']} requests, {concurrency} in flight"


def render(result: dict[str, Any]) -> str:
    counts = result["instructions"]
    labels = result["labels"]
    if result.get("flow") == "tool-loop":  # JSON written before --flow has none: plain
        first = counts["toolwire"]["json"]
        kind = result.get("kind", "python")
        lines = [
            f"instructions per tool-loop request, {kind} tool ({_how_many(result)}, callgrind)"
        ]
        for key, modes in counts.items():
            n = modes["json"]
            lines.append(f"{labels[key]:<28}{n / 1000:>13.0f}k{n / first:>7.2f}x")
        return "\n".join(lines + _goal_tree_lines(result, ("json",)))
    base = counts["passthrough"]
    lines = [f"instructions per request ({_how_many(result)}, callgrind)"]
    lines.append(f"{'server':<28}{'unstreamed':>14}{'ratio':>8}{'streamed':>14}{'ratio':>8}")
    for key, modes in counts.items():
        row = f"{labels[key]:<28}"
        for mode in MODES:
            row += f"{modes[mode] / 1000:>13.0f}k{modes[mode] / base[mode]:>7.2f}x"
        lines.append(row)
    if "floor" not in counts:  # a run without the floor: issue 16's goal
        for mode in MODES:
            ratio = counts["toolwire"][mode] / base[mode]
            verdict = "PASS" if ratio <= result["goal"] else "MISS"
            lines.append(
                f"{verdict}  {mode}: toolwire {ratio:.2f}x the pass-through "
                f"(goal <= {result['goal']:.2f}x)"
            )
    else:  # issue 29's CPU goal, counted: within 1.3x the injecting floor
        limit = result.get("floor_goal", FLOOR_GOAL)
        for mode in MODES:
            floor, ours = counts["floor"][mode], counts["toolwire"][mode]
            verdict = "PASS" if ours / floor <= limit else "MISS"
            lines.append(
                f"{verdict}  {mode}: toolwire {ours / floor:.2f}x the injecting floor "
                f"(goal <= {limit:.2f}x), {ours / base[mode]:.2f}x the pass-through; "
                f"the floor {floor / base[mode]:.2f}x"
            )
    return "\n".join(lines + _goal_tree_lines(result, MODES))


def _goal_tree_lines(result: dict[str, Any], modes: tuple[str, ...]) -> list[str]:
    """PASS/MISS: this tree's count at or below the goal tree's, counted in the same run."""
    key = result.get("goal_key")
    if key is None:
        return []
    counts, label = result["instructions"], result["labels"][key].removesuffix(" (goal)")
    lines = []
    for mode in modes:
        ours, theirs = counts["toolwire"][mode], counts[key][mode]
        verdict = "PASS" if ours <= theirs else "MISS"
        lines.append(
            f"{verdict}  {mode}: toolwire {ours / 1000:.0f}k, {ours / theirs:.2f}x {label}'s "
            f"{theirs / 1000:.0f}k (goal: at or below it)"
        )
    return lines


if __name__ == "__main__":
    sys.exit(main())
