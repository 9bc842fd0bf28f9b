"""Bytecodes per plain request, function by function: what the interpreter runs for the
pass-through, the injecting floor and toolwire, counted by CPython's own opcode trace.

`bench/pystats.py` counts the same bytecodes in total, by opcode, and needs an interpreter
built for it; this runs under the project's own interpreter and says which functions run
them and how often each is entered (a call, or a coroutine's resumption): where a change
would save work, and what a change saved. Each server (as `bench/overhead.py` starts it, in
front of `bench/fake_upstream.py`) runs under `bench/opcode_tracer.py`, answers `--warmup`
sequential plain Chat requests, writes its counts, answers `--requests` more and writes them
again: the difference, over `--requests`, is a request's own. Two runs agree to the
bytecode, but for the event loop's own timers.

    .venv/bin/python bench/opcodes.py                       # totals, and toolwire's busiest
    .venv/bin/python bench/opcodes.py --stream --top 40     # streamed requests
    .venv/bin/python bench/opcodes.py --sdk-headers         # as the OpenAI SDK sends them
    .venv/bin/python bench/opcodes.py --targets toolwire --json out.json

The trace counts a bytecode as the interpreter dispatches it (3.11's specialized and
`EXTENDED_ARG` forms alike, `CACHE` entries not), so its totals run about a sixth above
pystats'; compare counts of one bench.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.harness import (
    BENCH,
    ROOT,
    Processes,
    add_json,
    progress,
    upstream_command,
    write_json,
)
from bench.overhead_targets import plain_chat_options, specs
from bench.workload import post_plain

TARGETS = {"passthrough": "pt", "floor": "floor", "toolwire": "tw"}
TRACER = BENCH / "opcode_tracer.py"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("--requests", type=int, default=1000, help="counted requests per server")
    add("--warmup", type=int, default=300, help="requests before counting")
    add("--top", type=int, default=30, help="toolwire's functions listed, busiest first")
    add("--stream", action="store_true", help="streamed requests (20 chunks) instead")
    add(
        "--sdk-headers",
        action="store_true",
        help="with the 17 headers the OpenAI SDK sends (its key among them), not 4",
    )
    add("--targets", default=",".join(TARGETS), help="servers counted, comma-separated")
    add("--start-timeout", type=float, default=120, help="seconds a server may take to start")
    add_json(parser)
    args = parser.parse_args(argv)
    args.targets = [t for t in args.targets.split(",") if t]
    unknown = set(args.targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}: choose from {list(TARGETS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args)
    print(render(result, args.top))
    if args.json:
        write_json(Path(args.json), result)
    return 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Each target's bytecodes and calls per request, function by function."""
    found: dict[str, dict[str, list[float]]] = {}
    options = plain_chat_options()
    with tempfile.TemporaryDirectory(prefix="toolwire-opcodes-") as tmp:
        workdir = Path(tmp)
        procs = Processes(workdir)
        try:
            upstream = procs.serve("upstream", upstream_command(), None)
            procs.wait_ready(upstream)
            for key, label, cmd, _ in specs(options, workdir, f"{upstream.base}/v1"):
                if key in args.targets:
                    progress(label)
                    found[key] = _counted(procs, key, traced(cmd), workdir / key, args)
        finally:
            procs.close()
    mode = "streamed" if args.stream else "unstreamed"
    if args.sdk_headers:
        mode += ", the SDK's headers"
    return {"requests": args.requests, "warmup": args.warmup, "mode": mode, "targets": found}


def traced(cmd: list[str]) -> list[str]:
    """`cmd` (a target's, as `bench/overhead_targets.py` makes it) run under the tracer: a
    script of the bench's by its path, `toolwire` by its module."""
    if len(cmd) > 1 and cmd[1].endswith(".py"):
        return [sys.executable, str(TRACER), "{out}", "--script", cmd[1], "--", *cmd[2:]]
    rest = cmd[1:] if Path(cmd[0]).name == "toolwire" else cmd[3:]  # `python -m proxy`
    return [sys.executable, str(TRACER), "{out}", "--module", "proxy", "--", *rest]


def _counted(
    procs: Processes, key: str, cmd: list[str], out: Path, args: argparse.Namespace
) -> dict[str, list[float]]:
    """The counts of `--requests` requests after `--warmup`: two writes' difference."""
    server = procs.serve(key, [part.replace("{out}", str(out)) for part in cmd], None)
    procs.wait_ready(server, timeout=args.start_timeout)
    port = int(server.base.rsplit(":", 1)[1])
    post_plain(port, args.warmup, args.stream, args.sdk_headers)
    first = _written(server.proc, out, 1)
    post_plain(port, args.requests, args.stream, args.sdk_headers)
    second = _written(server.proc, out, 2)
    procs.stop(server.proc)
    return per_request(first, second, args.requests)


def _written(proc: Any, out: Path, number: int) -> dict[str, list[int]]:
    """The counts the traced server writes when signalled (its `number`th write)."""
    proc.send_signal(signal.SIGUSR1)
    path = Path(f"{out}.{number}")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if path.exists():
            try:
                found: dict[str, list[int]] = orjson.loads(path.read_bytes())
                return found
            except orjson.JSONDecodeError:
                pass  # still being written
        time.sleep(0.05)
    raise RuntimeError(f"the traced server wrote no counts to {path}")


def per_request(
    first: dict[str, list[int]], second: dict[str, list[int]], requests: int
) -> dict[str, list[float]]:
    """Each function's bytecodes and calls per request: the second write's counts beyond the
    first's. Functions are named `path:line:qualname`, paths within the project relative."""
    found: dict[str, list[float]] = {}
    root = str(ROOT) + "/"
    for name, (bytecodes, calls) in second.items():
        before, called = first.get(name, (0, 0))
        if bytecodes > before:
            short = name.removeprefix(root)
            found[short] = [(bytecodes - before) / requests, (calls - called) / requests]
    return found


def totals(functions: dict[str, list[float]]) -> tuple[float, float]:
    """Bytecodes and calls per request, every function's summed."""
    return sum(v[0] for v in functions.values()), sum(v[1] for v in functions.values())


def render(result: dict[str, Any], top: int) -> str:
    """The totals of each target, then toolwire's busiest functions."""
    targets: dict[str, dict[str, list[float]]] = result["targets"]
    lines = [
        f"per {result['mode']} plain request ({result['requests']} counted after "
        f"{result['warmup']}; the opcode trace)",
        f"{'':<28}{'bytecodes':>12}{'calls':>10}",
    ]
    for key, functions in targets.items():
        bytecodes, calls = totals(functions)
        lines.append(f"{key:<28}{bytecodes:>12,.0f}{calls:>10,.1f}")
    busiest = targets.get("toolwire")
    if busiest:
        lines += ["", f"toolwire's {top} busiest functions: bytecodes, calls per request"]
        ranked = sorted(busiest.items(), key=lambda item: -item[1][0])
        for name, (bytecodes, calls) in ranked[:top]:
            lines.append(f"{bytecodes:>9,.1f} {calls:>6.2f}  {name}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
