"""Bytecodes per plain request, and how well CPython specializes them: Toolwire against the
pass-through and the injecting floor, counted by the interpreter itself.

bench/instructions.py counts machine instructions; this counts what the interpreter does with
them. Each server runs under a CPython built with `--enable-pystats`, which counts every
bytecode it executes, every specialization it makes, hits, misses or fails, the frames it
pushes and the objects it allocates, and writes the totals to /tmp/py_stats/ when it exits.
Each server runs twice, answering `--warmup` and then `--warmup` + `--requests` sequential
plain Chat requests (bench/workload.py's) before it is stopped (SIGINT: its clean exit);
the difference between the two runs, over `--requests`, is a request's own, start-up and
shutdown cancelling out. The figures are exact: two runs agree to the bytecode.

    .venv-pystats/bin/python bench/pystats.py               # the table
    .venv-pystats/bin/python bench/pystats.py --json out.json --top 30
    .venv-pystats/bin/python bench/pystats.py --stream       # streamed requests instead

It must run under that interpreter (every process it starts does). Python 3.11's pystats
build, from Debian's source of the interpreter this machine's image has, into a venv beside
the project's:

    apt-get source --download-only python3.11   # with a deb-src line in apt's sources
    tar xzf python3.11_*.orig.tar.gz && cd Python-3.11.*
    ./configure --enable-pystats --prefix=/opt/pystats && make -j2 && make install
    /opt/pystats/bin/python3.11 -m venv --without-pip .venv-pystats
    .venv/bin/pip --python .venv-pystats/bin/python install -e ".[dev]"

Opcodes are named as 3.11 numbers them: the specialized forms take the unused numbers in
the order `opcode._specialized_instructions` lists them.
"""

from __future__ import annotations

import argparse
import glob
import opcode
import signal
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.harness import Processes, add_json, progress, upstream_command, write_json
from bench.overhead_targets import plain_chat_options, specs
from bench.workload import post_plain

STATS_DIR = "/tmp/py_stats"
TARGETS = {"passthrough": "pt", "floor": "floor", "toolwire": "tw"}
SUMMARY = (
    ("bytecodes", "bytecodes executed"),
    ("Frames pushed", "frames pushed"),
    ("Calls to Python functions inlined", "calls inlined"),
    ("Object allocations", "objects allocated"),
    ("hit", "specialized, hit"),
    ("miss", "specialized, missed"),
    ("deferred", "adaptive, deferred"),
    ("failure", "not specialized"),
    ("deopt", "deoptimized"),
)
"""The table's first rows: a total of the stats (or the named line) and its label."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("--requests", type=int, default=2000, help="counted requests per server")
    add("--warmup", type=int, default=300, help="requests before counting")
    add("--top", type=int, default=25, help="opcodes listed, by toolwire's excess")
    add("--stream", action="store_true", help="streamed requests (20 chunks) instead")
    add("--start-timeout", type=float, default=120, help="seconds a server may take to start")
    add_json(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if "--enable-pystats" not in str(sysconfig.get_config_var("CONFIG_ARGS")):
        print("bench/pystats.py runs under a CPython built with --enable-pystats (see its doc)")
        return 2
    result = run(args)
    print(render(result, args.top))
    if args.json:
        write_json(Path(args.json), result)
    return 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Each target's stats per request: the difference of a short and a long run."""
    Path(STATS_DIR).mkdir(exist_ok=True)
    found: dict[str, dict[str, float]] = {}
    options = plain_chat_options()
    with tempfile.TemporaryDirectory(prefix="toolwire-pystats-") as tmp:
        procs = Processes(Path(tmp))
        try:
            upstream = procs.serve("upstream", upstream_command(), None)
            procs.wait_ready(upstream)
            for key, label, cmd, _ in specs(options, Path(tmp), f"{upstream.base}/v1"):
                if key not in TARGETS:
                    continue
                progress(label)
                counts = (args.warmup, args.warmup + args.requests)
                short, long = (_stats_of(procs, key, cmd, n, args) for n in counts)
                found[key] = per_request(short, long, args.requests)
        finally:
            procs.close()
    mode = "streamed" if args.stream else "unstreamed"
    return {"requests": args.requests, "warmup": args.warmup, "mode": mode, "targets": found}


def _stats_of(
    procs: Processes, key: str, cmd: list[str], requests: int, args: argparse.Namespace
) -> str:
    """The stats a fresh server of `cmd` writes when stopped after `requests` requests."""
    before = set(glob.glob(f"{STATS_DIR}/*.txt"))
    server = procs.serve(f"{key}-{requests}", cmd, None)
    procs.wait_ready(server, timeout=args.start_timeout)
    post_plain(int(server.base.rsplit(":", 1)[1]), requests, args.stream)
    server.proc.send_signal(signal.SIGINT)
    server.proc.wait(timeout=60)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        written = set(glob.glob(f"{STATS_DIR}/*.txt")) - before
        if written:
            (path,) = written
            return Path(path).read_text()
        time.sleep(0.05)
    raise RuntimeError(f"{key} wrote no stats to {STATS_DIR}")


def parse(text: str) -> dict[str, int]:
    """A stats file's `name : count` lines."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        name, colon, value = line.rpartition(":")
        value = value.strip()
        if colon and value.isdigit():
            found[name.strip()] = int(value)
    return found


def per_request(short: str, long: str, requests: int) -> dict[str, float]:
    """What the long run counted beyond the short one, per request, with the totals
    `SUMMARY` names: every opcode's executions, and its specializations by outcome."""
    first, second = parse(short), parse(long)
    diff = {k: (second.get(k, 0) - first.get(k, 0)) / requests for k in first.keys() | second}
    names = opcode_names()
    # The object and call stats as they are; the opcodes' by name, below (not their pairs).
    found = {k: v for k, v in diff.items() if v and not k.startswith("opcode[")}
    found["bytecodes"] = 0.0
    for number, name in enumerate(names):
        executed = diff.get(f"opcode[{number}].execution_count", 0.0)
        if executed:
            found[f"op {name}"] = executed
            found["bytecodes"] += executed
        for outcome in ("hit", "miss", "deferred", "failure", "deopt"):
            found[outcome] = found.get(outcome, 0.0) + diff.get(
                f"opcode[{number}].specialization.{outcome}", 0.0
            )
    return found


def opcode_names() -> list[str]:
    """Every opcode number's name, the specialized ones included (3.11's numbering)."""
    names = list(opcode.opname)
    free = [number for number, name in enumerate(names) if name.startswith("<")]
    specialized: list[str] = getattr(opcode, "_specialized_instructions", [])
    for number, name in zip(free, specialized, strict=False):
        names[number] = name
    return names


def render(result: dict[str, Any], top: int) -> str:
    """The totals, then the opcodes toolwire executes most beyond the floor."""
    targets: dict[str, dict[str, float]] = result["targets"]
    keys = list(targets)
    lines = [
        f"per {result.get('mode', 'unstreamed')} plain request ({result['requests']} counted after "
        f"{result['warmup']}; "
        "the whole process's interpreter)",
        f"{'':<38}" + "".join(f"{TARGETS.get(k, k):>10}" for k in keys),
    ]
    for stat, label in SUMMARY:
        lines.append(_row(label, [targets[k].get(stat, 0.0) for k in keys]))
    if "floor" in targets and "toolwire" in targets:
        floor, toolwire = targets["floor"], targets["toolwire"]
        ops = [k for k in floor.keys() | toolwire.keys() if k.startswith("op ")]
        ops.sort(key=lambda k: floor.get(k, 0.0) - toolwire.get(k, 0.0))
        lines += ["", f"the {top} opcodes toolwire runs most beyond the floor"]
        for op in ops[:top]:
            lines.append(_row(op.removeprefix("op "), [targets[k].get(op, 0.0) for k in keys]))
    return "\n".join(lines)


def _row(label: str, values: list[float]) -> str:
    return f"{label:<38}" + "".join(f"{v:>10.1f}" for v in values)


if __name__ == "__main__":
    sys.exit(main())
