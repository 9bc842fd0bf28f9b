"""System calls, context switches and user/system CPU per request at c=64: what a closed loop
of many connections costs a server beyond the instructions counted one request at a time
(`bench/instructions.py`), for the pass-through, the injecting floor and toolwire.

    .venv/bin/python bench/syscalls.py                        # the table
    .venv/bin/python bench/syscalls.py --toolwire-tree /tmp/old  # and an older tree's toolwire
    .venv/bin/python bench/syscalls.py --json out.json --duration 5

Each target (as `bench/overhead.py` starts it, in front of `bench/fake_upstream.py`) is driven
by wrk (`bench/wrk.py`'s checking script) at `--concurrency` connections, non-streamed and
streamed, twice after a warm-up:

* untraced: the server's voluntary and involuntary context switches (every thread's, from
  /proc/PID/task/*/status) and its user and system CPU (/proc/PID/stat) per answered request;
  with the server pinned, the wake-up IPIs (/proc/interrupts' function-call and reschedule
  interrupts) its CPU got and the other CPUs got: a write that wakes a task sleeping on an
  idle CPU costs the writer an IPI, which in a VM is an exit, so a server whose peers sleep
  more often between its writes pays more system time for the same system calls;
* under `strace -c -f -p PID`: every system call by name per answered request. strace stops
  the server at every call, so the server is slower and each read finds more waiting: the
  counts are those of a slower server (fewer calls per request where they batch), alike for
  every target. Compare targets within one run, not across runs.

With `--callgrind SECONDS` each target is also started under valgrind's callgrind, a fresh
process per mode, and its instructions are counted over SECONDS of the same c=64 load (after
a warm-up): instructions per answered request, and how many of them the cyclic garbage
collector ran (gcmodule.c and the types' traverse and visit functions). One request at a time
(`bench/instructions.py`) the collector hardly runs; with 64 in flight it walks all their
objects. Requests still in flight when counting stops are counted but not answered, and
wrk gives up on some (10 s) under valgrind, so the totals are within a few %; the
collector's share is the figure to compare.

Needs wrk and strace (`apt-get install -y wrk strace`) and ptrace permission on the servers.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench import wrk
from bench.cpu import Cpus
from bench.goals import load_average
from bench.harness import (
    Processes,
    Server,
    add_json,
    add_no_pin,
    add_toolwire_tree,
    bench_main,
    check_trees,
    progress,
    terminate_on_sigterm,
    upstream_command,
)
from bench.overhead_measure import write_bodies
from bench.overhead_targets import specs
from bench.workload import API_PATHS, MODES, TEXT

TARGETS = ("passthrough", "floor", "toolwire")
COUNTERS = ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")
SHORT = {"passthrough": "pt", "floor": "floor", "toolwire": "tw"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="System calls, context switches and CPU per request at c=64.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("--concurrency", type=int, default=64, help="wrk connections")
    add("--duration", type=float, default=3.0, help="counted seconds per run (whole seconds)")
    add("--warmup", type=float, default=1.0, help="uncounted seconds before each target's runs")
    add("--modes", default=",".join(MODES), help="json, stream or both")
    add("--log-level", default="warning", help="log level of every server")
    add(
        "--tracer",
        choices=("perf", "strace"),
        default="perf",
        help="what counts the system calls: perf (in-kernel counters, the server at full "
        "speed) or strace -c (stops the server at every call: a slower server's counts)",
    )
    add(
        "--callgrind",
        type=float,
        default=0,
        metavar="SECONDS",
        help="also count instructions per request under callgrind over SECONDS of load "
        "(valgrind; minutes)",
    )
    add_toolwire_tree(parser, "also measure the toolwire of another source tree (chat)")
    add_no_pin(parser)
    add_json(parser, bare=True)
    args = parser.parse_args(argv)
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not args.modes or any(m not in MODES for m in args.modes):
        parser.error(f"--modes: one or more of {', '.join(MODES)}")
    args.toolwire_tree = check_trees(parser, args.toolwire_tree)
    # What `bench/overhead_targets.specs` reads.
    args.apis = ("chat",)
    args.response_store_mib = 0
    args.with_no_tools = args.with_metrics_off = False
    args.reference_client = "http1"
    return args


# --------------------------------------------------------------------------- readings


_WAKE_UPS = ("CAL", "RES")
"""The IPIs a wake-up sends to another CPU (/proc/interrupts): a function call (the woken
task queued on an idle CPU's list) or a reschedule (on a busy one)."""


def wake_up_ipis(text: str) -> list[int]:
    """The wake-up IPIs each CPU has received, from /proc/interrupts' `text`."""
    found: list[int] = []
    for line in text.splitlines():
        name, _, rest = line.strip().partition(":")
        if name in _WAKE_UPS:
            counts = [int(f) for f in rest.split() if f.isdigit()]
            found = [a + b for a, b in zip(counts, found, strict=False)] if found else counts
    return found


def _ipis() -> list[int]:
    try:
        with open("/proc/interrupts") as f:
            return wake_up_ipis(f.read())
    except OSError:
        return []


def process_counters(pid: int) -> dict[str, float]:
    """Context switches (every thread's) and user/system CPU seconds of a process."""
    found = dict.fromkeys(COUNTERS, 0.0)
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/status") as f:
                for line in f:
                    name, _, value = line.partition(":")
                    if name in found:
                        found[name] += int(value)
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    found["minor_faults"] = int(fields[7])
    found["user_s"] = int(fields[11]) / tick
    found["system_s"] = int(fields[12]) / tick
    return found


def parse_strace(text: str) -> dict[str, int]:
    """Calls by name from `strace -c -U name,calls,errors` output (the total left out)."""
    calls: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or not parts[1].isdigit() or parts[0] == "total":
            continue
        calls[parts[0]] = calls.get(parts[0], 0) + int(parts[1])
    return calls


def parse_perf(text: str) -> dict[str, int]:
    """Calls by name from `perf stat -x, -e 'syscalls:sys_enter_*'` output."""
    calls: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) < 3 or not parts[0].isdigit() or not int(parts[0]):
            continue
        name = parts[2].removeprefix("syscalls:sys_enter_")
        calls[name] = calls.get(name, 0) + int(parts[0])
    return calls


def _traced(pid: int) -> bool:
    """Whether every thread of `pid` has a tracer attached."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/status") as f:
            for line in f:
                if line.startswith("TracerPid:") and int(line.split()[1]) == 0:
                    return False
    return True


_GC_FUNCTIONS = re.compile(
    r"gcmodule\.c|_traverse|visit_decref|visit_reachable|_PyTuple_MaybeUntrack"
    r"|VisitInstanceAttributes"
)


def gc_instructions(dump: Path) -> tuple[int, int]:
    """(all instructions, the collector's) in a callgrind dump, by callgrind_annotate."""
    cmd = ["callgrind_annotate", "--inclusive=no", "--threshold=100", str(dump)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    total = collector = 0
    for line in out.splitlines():
        found = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)", line)
        if found is None:
            continue
        count = int(found.group(1).replace(",", ""))
        if "PROGRAM TOTALS" in found.group(2):
            total = count
        elif _GC_FUNCTIONS.search(found.group(2)):
            collector += count
    return total, collector


class Runner:
    """wrk and strace runs against one server at a time."""

    def __init__(self, args: argparse.Namespace, procs: Processes, cpus: Cpus) -> None:
        self.args = args
        self.procs = procs
        self.cpus = cpus
        found = wrk.find("wrk")
        assert found is not None
        self.wrk = found
        bodies = write_bodies(procs.workdir)
        self.scripts: dict[str, Path] = {}
        for mode in MODES:
            lua = procs.workdir / f"wrk-{mode}.lua"
            body = bodies["chat", mode].read_text()
            lua.write_text(wrk.lua_script(body, mode == "stream", "chat", TEXT))
            self.scripts[mode] = lua

    def load(self, server: Server, mode: str, seconds: float) -> dict[str, Any]:
        """One wrk run; its result line, RuntimeError when any answer was wrong."""
        url = server.base + API_PATHS["chat"]
        cmd = wrk.command(self.wrk, self.args.concurrency, seconds, self.scripts[mode], url)
        out, _ = self.procs.run("wrk", cmd, self.cpus.other, timeout=seconds + 120)
        raw = wrk.result(out)
        errors: dict[str, int] = {}
        wrk.merge_errors(errors, raw)
        if errors or not wrk.answered(raw):
            raise RuntimeError(f"{server.name} {mode}: errors {errors} {raw.get('sample', '')}")
        return raw

    def measure(self, server: Server, mode: str) -> dict[str, Any]:
        """Counters per answered request untraced, then system calls per request traced."""
        if self.args.warmup > 0:
            self.load(server, mode, self.args.warmup)
        ipis, before = _ipis(), process_counters(server.pid)
        raw = self.load(server, mode, self.args.duration)
        after, ipis = (
            process_counters(server.pid),
            [b - a for a, b in zip(ipis, _ipis(), strict=False)],
        )
        requests = wrk.answered(raw)
        counters = {k: (after[k] - before[k]) / requests for k in before}
        # With the server on a CPU of its own: the IPIs its CPU got (others waking it) and
        # the ones the other CPUs got (mostly the server waking the load and the upstream).
        mine = self.cpus.server
        if mine is not None and mine < len(ipis):
            counters["ipis_in"] = ipis[mine] / requests
            counters["ipis_out"] = (sum(ipis) - ipis[mine]) / requests
        result: dict[str, Any] = {
            "requests": requests,
            "rps": requests / (raw["duration_us"] / 1e6),
            "voluntary": counters["voluntary_ctxt_switches"],
            "involuntary": counters["nonvoluntary_ctxt_switches"],
            "minor_faults": counters["minor_faults"],
            "user_us": counters["user_s"] * 1e6,
            "system_us": counters["system_s"] * 1e6,
            "ipis_in": counters.get("ipis_in"),
            "ipis_out": counters.get("ipis_out"),
        }
        calls, traced = self.trace(server, mode)
        result["traced_requests"] = traced
        result["syscalls"] = {name: n / traced for name, n in sorted(calls.items())}
        return result

    def trace(self, server: Server, mode: str) -> tuple[dict[str, int], int]:
        """System calls by name during one wrk run, counted by the tracer, and the requests
        answered."""
        tool = self.args.tracer
        out = self.procs.workdir / f"{tool}-{server.name}-{mode}.txt"
        if tool == "perf":
            cmd = ["perf", "stat", "-x", ",", "-e", "syscalls:sys_enter_*", "-o", str(out)]
        else:
            cmd = ["strace", "-c", "-f", "-q", "-U", "name,calls,errors", "-o", str(out)]
        cmd += ["-p", str(server.pid)]
        tracer = self.procs.start(tool, cmd, self.cpus.other)
        try:
            deadline = time.monotonic() + 20
            # perf counts from when it opened its counters: a moment to do so.
            while not (_traced(server.pid) if tool == "strace" else out.exists()):
                if tracer.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{tool} did not attach:\n{self.procs.log_tail(tool)}")
                time.sleep(0.02)
            time.sleep(0.1)
            raw = self.load(server, mode, self.args.duration)
        finally:
            with contextlib.suppress(ProcessLookupError):
                tracer.send_signal(signal.SIGINT)
            try:
                tracer.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.procs.stop(tracer)
            self.procs.procs.remove(tracer)
        parse = parse_perf if tool == "perf" else parse_strace
        return parse(out.read_text()), wrk.answered(raw)

    def count(self, key: str, cmd: list[str], tree: Path | None, mode: str) -> dict[str, float]:
        """Instructions per answered request under callgrind, and the collector's."""
        dump = self.procs.workdir / f"callgrind.{key}.{mode}"
        valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]
        valgrind += [f"--callgrind-out-file={dump}.%p", *cmd]
        server = self.procs.serve(f"{key}-callgrind", valgrind, self.cpus.server, tree=tree)
        try:
            self.procs.wait_ready(server, timeout=600, probe=2)
            url = server.base + API_PATHS["chat"]
            c, lua = self.args.concurrency, self.scripts[mode]
            self.procs.run("wrk", wrk.command(self.wrk, c, 5, lua, url), self.cpus.other, 300)
            _control(server.pid, "-i", "on")
            seconds = self.args.callgrind
            cmd = wrk.command(self.wrk, c, seconds, lua, url)
            out, _ = self.procs.run("wrk", cmd, self.cpus.other, timeout=seconds + 300)
            _control(server.pid, "-i", "off")
            _control(server.pid, "-d")
            requests = wrk.answered(wrk.result(out))
            deadline = time.monotonic() + 30
            while not (
                dumps := [p for p in dump.parent.glob(f"{dump.name}.*") if p.stat().st_size]
            ):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no callgrind dump from {key}")
                time.sleep(0.1)
            total = collector = 0
            for path in dumps:
                counted = gc_instructions(path)
                total, collector = total + counted[0], collector + counted[1]
        finally:
            self.procs.end(server.proc, signal.SIGKILL)
        return {"instructions": total / requests, "collector": collector / requests}


def _control(pid: int, *options: str) -> None:
    subprocess.run(["callgrind_control", *options, str(pid)], check=True, capture_output=True)


# --------------------------------------------------------------------------- running


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Start the upstream and the targets, measure each in turn, stop them all."""
    load = load_average()
    cpus = Cpus.detect(not args.no_pin)
    cpus.pin_self()
    if wrk.find("auto") is None:
        raise SystemExit("bench/syscalls.py needs wrk (apt-get install -y wrk)")
    with tempfile.TemporaryDirectory(prefix="toolwire-syscalls-") as tmp, terminate_on_sigterm():
        workdir = Path(tmp)
        procs = Processes(workdir)
        try:
            upstream = procs.serve("upstream", upstream_command(), cpus.other)
            procs.wait_ready(upstream)
            servers: dict[str, Server] = {}
            labels: dict[str, str] = {}
            commands: dict[str, tuple[list[str], Path | None]] = {}
            for key, label, cmd, tree in specs(args, workdir, f"{upstream.base}/v1"):
                if key in TARGETS or key.startswith("toolwire_tree"):
                    servers[key] = procs.serve(key, cmd, cpus.server, tree=tree)
                    labels[key] = label
                    commands[key] = (cmd, tree)
            for server in servers.values():
                procs.wait_ready(server)
            runner = Runner(args, procs, cpus)
            measured: dict[str, dict[str, Any]] = {}
            for mode in args.modes:
                measured[mode] = {}
                for key, server in servers.items():
                    progress(f"{mode:<6} {labels[key]}")
                    measured[mode][key] = runner.measure(server, mode)
            if args.callgrind:
                for server in servers.values():
                    procs.end(server.proc)  # the counted ones run alone
                for mode in args.modes:
                    for key in servers:
                        progress(f"{mode:<6} {labels[key]} under callgrind")
                        measured[mode][key].update(runner.count(key, *commands[key], mode))
        finally:
            procs.close()
    meta = {
        "concurrency": args.concurrency,
        "duration": args.duration,
        "pinning": cpus.describe(),
        "load_average_start": load,
        "load_average_end": load_average(),
    }
    return {"meta": meta, "labels": labels, "modes": measured}


# --------------------------------------------------------------------------- report


def render(result: dict[str, Any]) -> str:
    """One table per mode: a row per system call (and the counters), a column per target."""
    meta = result["meta"]
    lines = [
        f"per answered request at c={meta['concurrency']}, {meta['duration']:g} s runs; "
        f"{meta['pinning']}; load average {meta['load_average_start']}",
    ]
    for mode, measured in result["modes"].items():
        keys = list(measured)
        heads = [_short(key) for key in keys]
        lines += ["", f"{mode}", f"{'':<22}" + "".join(f"{h:>10}" for h in heads)]
        names = sorted(
            {n for m in measured.values() for n in m["syscalls"]},
            key=lambda n: -max(m["syscalls"].get(n, 0.0) for m in measured.values()),
        )
        for name in names:
            values = [measured[k]["syscalls"].get(name, 0.0) for k in keys]
            if max(values) >= 0.005:
                lines.append(_row(name, values, 2))
        lines.append(_row("system calls", [sum(measured[k]["syscalls"].values()) for k in keys], 2))
        for field, label in (
            ("voluntary", "voluntary switches"),
            ("involuntary", "involuntary switches"),
            ("minor_faults", "minor faults"),
            ("user_us", "user us (untraced)"),
            ("system_us", "system us (untraced)"),
            ("rps", "req/s (untraced)"),
            ("ipis_in", "IPIs to its CPU"),
            ("ipis_out", "IPIs to the others"),
        ):
            values = [measured[k].get(field) for k in keys]
            if None in values:
                continue  # not pinned (or no /proc/interrupts): no CPU of its own to tell
            lines.append(_row(label, values, 1 if "us" in field else 2))
        if all("instructions" in measured[k] for k in keys):
            for field, label in (
                ("instructions", "instructions k"),
                ("collector", "  collector's k"),
            ):
                lines.append(_row(label, [measured[k][field] / 1000 for k in keys], 1))
    return "\n".join(lines)


def _short(key: str) -> str:
    if key.startswith("toolwire_tree"):
        return "tw@" + key.removeprefix("toolwire_tree")
    return SHORT.get(key, key)


def _row(label: str, values: list[float], digits: int) -> str:
    return f"{label:<22}" + "".join(f"{v:>10.{digits}f}" for v in values)


def main(argv: list[str] | None = None) -> int:
    return bench_main(argv, parse_args, run, render)


if __name__ == "__main__":
    sys.exit(main())
