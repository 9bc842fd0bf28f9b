"""Instructions per request: Toolwire against the pass-through, counted, not timed.

CPU time per request (bench/overhead.py) is the figure users feel, but on a shared or
virtual machine it moves by tens of percent from run to run. An instruction count does
not: each server runs under valgrind's callgrind with counting switched on only around a
fixed number of sequential requests (after a warm-up), so two runs of the same commit agree
to about 1 % whatever else the machine does. Use it to compare commits and to check the
ratio to the pass-through; use overhead.py for the absolute figures.

    .venv/bin/python bench/instructions.py                  # chat, unstreamed and streamed
    .venv/bin/python bench/instructions.py --toolwire-tree ../old   # also an older tree
    .venv/bin/python bench/instructions.py --flow tool-loop         # one tool round per request

`--flow tool-loop` counts requests that each make one Python tool call and then answer
(bench/tool_loop.py's model and tool, unstreamed): what a tool round costs, for A/B between
trees; a pass-through cannot run tools, so that flow has no pass-through row.

The plain flow also counts the injecting floor (`bench/passthrough.py --inject-tools`, see
bench/overhead.py): the pass-through plus the least work a tool-injecting proxy must do.

Needs `valgrind` (Debian package); servers run ~50x slower under it, so a run takes a few
minutes. Goal (issue 16): Toolwire within 1.15x the pass-through's instructions.
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loop_clients import QUESTION, check_answer
from overhead import (
    BENCH,
    CHUNKS,
    ROOT,
    TEXT,
    free_port,
    injected_tools,
    request_body,
    toolwire_command,
    tree_label,
)

GOAL = 1.15
MODES = ("json", "stream")
FLOWS = ("plain", "tool-loop")


@dataclass
class Server:
    """One server under callgrind."""

    key: str
    label: str
    cmd: list[str]
    cwd: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    out: Path | None = None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Instructions per request of Toolwire vs a pass-through (callgrind).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--requests", type=int, default=200, help="counted requests per mode")
    parser.add_argument("--warmup", type=int, default=30, help="uncounted requests per mode")
    parser.add_argument(
        "--toolwire-tree", type=Path, action="append", default=[], metavar="DIR",
        help="also count toolwire from another source tree (e.g. a git worktree)",
    )  # fmt: skip
    parser.add_argument("--flow", choices=FLOWS, default="plain", help="what each request does")
    parser.add_argument("--start-timeout", type=float, default=600, help="seconds to start")
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON to PATH")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="toolwire-instr-") as tmp:
        workdir = Path(tmp)
        upstream = _start_upstream(workdir, args.flow)
        try:
            servers = _servers(args, workdir, upstream)
            result = _count_all(args, servers, workdir)
        finally:
            upstream.terminate()
            upstream.wait(10)
    print(render(result))
    if args.json:
        Path(args.json).write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    return 0


def _start_upstream(workdir: Path, flow: str = "plain") -> subprocess.Popen[bytes]:
    port = free_port()
    if flow == "tool-loop":
        cmd = [sys.executable, str(BENCH / "loop_upstream.py"), "--port", str(port)]
    else:
        cmd = [sys.executable, str(BENCH / "fake_upstream.py"), "--port", str(port)]
        cmd += ["--chunks", str(CHUNKS), "--text", TEXT]
    log = (workdir / "upstream.log").open("wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    proc.port = port  # type: ignore[attr-defined]
    _wait(port, proc, 30)
    return proc


def _servers(
    args: argparse.Namespace, workdir: Path, upstream: subprocess.Popen[bytes]
) -> list[Server]:
    url = f"http://127.0.0.1:{upstream.port}/v1"  # type: ignore[attr-defined]
    tools = BENCH / "loop_tools.py" if args.flow == "tool-loop" else ROOT / "examples" / "tools.py"
    config = {
        "server": {"host": "127.0.0.1"},
        "upstreams": [{"name": "fake", "base_url": url}],
        "tools": [{"python": str(tools), "namespace": "demo"}],
    }
    path = workdir / "toolwire.yaml"
    path.write_bytes(orjson.dumps(config))
    # Every server logs at warning, as in bench/overhead.py: at toolwire's default (info) its
    # per-request summary line would be counted, and the pass-through writes none.
    log_level = ["--log-level", "warning"]
    passthrough = [sys.executable, str(BENCH / "passthrough.py"), "--upstream", url]
    serve = ["serve", "--config", str(path), *log_level]
    toolwire = Server("toolwire", "toolwire", [*toolwire_command(), *serve], ROOT)
    servers = [toolwire]
    if args.flow == "plain":
        servers.insert(0, Server("passthrough", "pass-through", [*passthrough, *log_level], ROOT))
        inject = ["--inject-tools", str(injected_tools(path, workdir))]
        floor = Server("floor", "injecting floor", [*passthrough, *log_level, *inject], ROOT)
        servers.insert(1, floor)
    for index, tree in enumerate(args.toolwire_tree, 1):
        cmd = [sys.executable, "-m", "proxy", *serve]
        servers.append(Server(f"toolwire_tree{index}", f"toolwire {tree_label(tree)}", cmd, tree))
    return servers


def _count_all(args: argparse.Namespace, servers: list[Server], workdir: Path) -> dict[str, Any]:
    modes = MODES if args.flow == "plain" else ("json",)
    bodies = {mode: _body(args.flow, mode == "stream") for mode in modes}
    counts: dict[str, dict[str, float]] = {}
    for server in servers:
        counts[server.key] = {}
        for mode in modes:
            # A fresh process per mode: the counts of one never include the other's.
            _start(server, workdir, args.start_timeout)
            try:
                counts[server.key][mode] = _count(server, bodies[mode], args)
            finally:
                _stop(server)
    return {
        "flow": args.flow,
        "requests": args.requests,
        "labels": {s.key: s.label for s in servers},
        "instructions": counts,
        "goal": GOAL,
    }


def _body(flow: str, stream: bool) -> bytes:
    if flow == "tool-loop":
        return orjson.dumps({"model": "fake-model", "messages": QUESTION})
    return orjson.dumps(request_body(stream))


def _start(server: Server, workdir: Path, timeout: float) -> None:
    server.port = free_port()
    server.out = workdir / f"callgrind.{server.key}.{server.port}"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]
    cmd += [f"--callgrind-out-file={server.out}.%p", *server.cmd, "--port", str(server.port)]
    log = (workdir / f"{server.key}.log").open("wb")
    server.proc = subprocess.Popen(cmd, cwd=server.cwd, stdout=log, stderr=subprocess.STDOUT)
    _wait(server.port, server.proc, timeout)


def _stop(server: Server) -> None:
    if server.proc is not None and server.proc.poll() is None:
        server.proc.kill()
        server.proc.wait(30)


def _count(server: Server, body: bytes, args: argparse.Namespace) -> float:
    """Instructions per request over `args.requests` sequential requests."""
    assert server.proc is not None and server.out is not None
    _post(server.port, body, args.warmup)
    _control(server.proc.pid, "-i", "on")
    _post(server.port, body, args.requests)
    _control(server.proc.pid, "-d")
    total = 0
    for _ in range(100):
        dumps = list(server.out.parent.glob(f"{server.out.name}.*"))
        total = sum(_totals(path) for path in dumps)
        if total:
            break
        time.sleep(0.1)
    if not total:
        raise RuntimeError(f"no callgrind dump from {server.label}")
    for path in server.out.parent.glob(f"{server.out.name}.*"):
        path.unlink()
    return total / args.requests


def _control(pid: int, *options: str) -> None:
    subprocess.run(["callgrind_control", *options, str(pid)], check=True, capture_output=True)


def _totals(path: Path) -> int:
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    return 0


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


def _wait(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server on port {port} exited ({proc.returncode})")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/v1/models")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"server on port {port} not ready after {timeout:.0f} s")


def render(result: dict[str, Any]) -> str:
    counts = result["instructions"]
    labels = result["labels"]
    if result.get("flow") == "tool-loop":  # JSON written before --flow has none: plain
        first = counts["toolwire"]["json"]
        lines = [f"instructions per tool-loop request ({result['requests']} sequential, callgrind)"]
        for key, modes in counts.items():
            n = modes["json"]
            lines.append(f"{labels[key]:<28}{n / 1000:>13.0f}k{n / first:>7.2f}x")
        return "\n".join(lines)
    base = counts["passthrough"]
    lines = [f"instructions per request ({result['requests']} sequential requests, callgrind)"]
    lines.append(f"{'server':<28}{'unstreamed':>14}{'ratio':>8}{'streamed':>14}{'ratio':>8}")
    for key, modes in counts.items():
        row = f"{labels[key]:<28}"
        for mode in MODES:
            row += f"{modes[mode] / 1000:>13.0f}k{modes[mode] / base[mode]:>7.2f}x"
        lines.append(row)
    for mode in MODES:
        ratio = counts["toolwire"][mode] / base[mode]
        verdict = "PASS" if ratio <= result["goal"] else "MISS"
        lines.append(f"{verdict}  {mode}: toolwire {ratio:.2f}x the pass-through (goal <= 1.15x)")
    if "floor" in counts:
        for mode in MODES:
            floor = counts["floor"][mode]
            lines.append(
                f"INFO  {mode}: toolwire {counts['toolwire'][mode] / floor:.2f}x the injecting "
                f"floor, which is {floor / base[mode]:.2f}x the pass-through"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
