"""Boot time and memory with many MCP stdio servers, started with the proxy or on first use.

    .venv/bin/python bench/tool_sources.py --boot [--servers 50] [--tools 4]

`--servers` MCP stdio servers (`testing/lazy_server.py`, written with the `mcp` SDK, each
with `--tools` numbered tools besides its own three) are configured in one `toolwire serve`,
three ways, one after another:

* eager            every server started at boot, as `mcp:` entries are by default;
* lazy, no cache   `lazy: true` with no manifest cached: each server is started once at boot
                   to be listed, and stopped (a fresh replica, or after a changed entry);
* lazy, cached     `lazy: true` with the manifests the previous boot wrote: no server runs.

Per way: the boot time (the process started to `/readyz` answering 200), the processes and
memory once ready (RSS and PSS summed over the proxy and every process below it, from /proc:
RSS counts shared pages once per process, PSS splits them), and a chat request through the
fake upstream (testing/upstream.py) whose model calls one server's tool, timed with the
official openai SDK: the first call and the next one. For the lazy ways the first call
starts the server: the admin's `first_use_ms` for it is shown too.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from openai import OpenAI

from bench.harness import ROOT, free_port, toolwire_command, write_config
from testing.mcp_servers import child_pids
from testing.upstream import FakeUpstream, Reply

ADMIN_KEY = "bench-admin"
READY_DEADLINE_S = 600.0


@dataclass(frozen=True, slots=True)
class Boot:
    """One way of configuring the servers, measured."""

    way: str
    boot_s: float
    processes: int
    rss_mib: float
    pss_mib: float
    first_call_ms: float
    next_call_ms: float
    first_use_ms: float | None


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boot", action="store_true", help="(how tool_sources.py gets here)")
    parser.add_argument("--servers", type=int, default=50, help="MCP stdio servers configured")
    parser.add_argument("--tools", type=int, default=4, help="numbered tools per server")
    return parser.parse_args(argv)


def model(body: dict[str, Any]) -> Reply:
    """Calls the tool the user names, then answers with its result."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply.text(f"result {last['content']}")
    return Reply.tool_calls([(last["content"], {})])


def config(upstream: str, servers: int, tools: int, *, lazy: bool, manifests: Path) -> dict:
    entries = [
        {
            "mcp": {
                "command": [sys.executable, "-m", "testing.lazy_server", "--tools", str(tools)],
                "cwd": str(ROOT),
                "env": {"PYTHONPATH": str(ROOT)},
                "connect_timeout_s": 300,
            },
            "namespace": f"s{number}",
            "lazy": lazy,
            "manifest_dir": str(manifests),
        }
        for number in range(servers)
    ]
    return {
        "upstreams": [{"name": "fake", "base_url": upstream, "models": ["*"]}],
        "tools": entries,
        "admin": {"enabled": True, "key": ADMIN_KEY},
    }


def tree_of(pid: int) -> set[int]:
    """`pid` and every process below it."""
    found = {pid}
    parents = [pid]
    while parents:
        children = child_pids(parents.pop())
        found |= children
        parents.extend(children)
    return found


def memory(pids: set[int]) -> tuple[int, float, float]:
    """Processes alive among `pids`, and their summed RSS and PSS in MiB."""
    alive, rss, pss = 0, 0, 0
    for pid in pids:
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        alive += 1
        for line in rollup.splitlines():
            key, _, value = line.partition(":")
            if key == "Rss":
                rss += int(value.split()[0])
            elif key == "Pss":
                pss += int(value.split()[0])
    return alive, rss / 1024, pss / 1024


@contextlib.contextmanager
def serving(path: Path, log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], float]]:
    """`toolwire serve` on `path`: its URL, its process, and how long until /readyz said 200."""
    port = free_port()
    command = [*toolwire_command(), "serve", "--config", str(path), "--port", str(port)]
    command += ["--log-level", "warning"]
    began = time.monotonic()
    with open(log, "wb") as output:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=output,
            stderr=output,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            if process.poll() is not None:
                raise SystemExit(f"toolwire serve exited; see {log}")
            if time.monotonic() - began > READY_DEADLINE_S:
                raise SystemExit(f"not ready after {READY_DEADLINE_S:g}s; see {log}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{base}/readyz", timeout=5) as answer,
            ):
                if answer.status == 200:
                    break
            time.sleep(0.02)
        yield base, process, time.monotonic() - began
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def first_use_ms(base: str, name: str) -> float | None:
    request = urllib.request.Request(
        f"{base}/admin/api/sources", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        sources = orjson.loads(answer.read())
    (source,) = [s for s in sources if s["name"] == name]
    value = source.get("first_use_ms")
    return None if value is None else float(value)


def timed_call(client: OpenAI, tool: str) -> float:
    began = time.perf_counter()
    answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": tool}])
    elapsed = time.perf_counter() - began
    text = answer.choices[0].message.content or ""
    if not text.startswith("result "):
        raise SystemExit(f"the call of {tool} failed: {text}")
    return elapsed * 1000


def measure(way: str, path: Path, log: Path, *, lazy: bool) -> Boot:
    with serving(path, log) as (base, process, boot_s):
        alive, rss, pss = memory(tree_of(process.pid))
        with OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0, timeout=300) as client:
            first = timed_call(client, "s0_t0")
            started = first_use_ms(base, "mcp:s0") if lazy else None
            following = timed_call(client, "s0_t1")
    return Boot(way, boot_s, alive, rss, pss, first, following, started)


def run(args: argparse.Namespace) -> list[Boot]:
    results = []
    with (
        tempfile.TemporaryDirectory(prefix="toolwire-boot-") as folder,
        FakeUpstream(Reply.func(model)).serve_in_thread() as upstream,
    ):
        workdir = Path(folder)
        manifests = workdir / "manifests"
        ways = [("eager", False), ("lazy, no cache", True), ("lazy, cached", True)]
        for number, (way, lazy) in enumerate(ways):
            print(f"... {way}", file=sys.stderr, flush=True)
            settings = config(
                upstream.base_url, args.servers, args.tools, lazy=lazy, manifests=manifests
            )
            path = write_config(workdir / f"proxy-{number}.yaml", settings)
            results.append(measure(way, path, workdir / f"serve-{number}.log", lazy=lazy))
    return results


def render(results: list[Boot], args: argparse.Namespace) -> str:
    head = (
        f"{'':16} {'boot s':>8} {'procs':>6} {'RSS MiB':>8} {'PSS MiB':>8} "
        f"{'1st call ms':>12} {'next ms':>8} {'start ms':>9}"
    )
    rows = [
        f"{r.way:16} {r.boot_s:8.2f} {r.processes:6d} {r.rss_mib:8.0f} {r.pss_mib:8.0f} "
        f"{r.first_call_ms:12.0f} {r.next_call_ms:8.0f} "
        f"{'-' if r.first_use_ms is None else f'{r.first_use_ms:.0f}':>9}"
        for r in results
    ]
    command = (
        "$ .venv/bin/python bench/tool_sources.py --boot "
        f"--servers {args.servers} --tools {args.tools}"
    )
    note = (
        f"{args.servers} MCP stdio servers of {args.tools + 3} tools each; memory of the proxy "
        "and every process below it once ready; a call = one chat request whose model calls "
        "one tool (s0_t0, then s0_t1); start ms = the admin's first_use_ms for mcp:s0"
    )
    return "\n".join([command, head, *rows, note])


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    print(render(run(args), args))
    return 0
