"""Instructions per plain request on the other fronts and the translating upstreams.

bench/instructions.py counts the Chat front over an OpenAI-Chat upstream; this counts the
rest of the data plane the same way (callgrind, counting on only around a fixed number of
sequential requests after a warm-up, so the figure hardly moves with the machine's load):

- `chat`: the Chat front over an OpenAI-Chat upstream, what bench/instructions.py counts,
  here as the others' reference in the same run (and for `--profile chat-json`);
- `responses`: the Responses front (`POST /v1/responses`) over an OpenAI-Chat upstream;
- `messages`: the Messages front (`POST /v1/messages`) over an OpenAI-Chat upstream;
- `anthropic`: the Chat front over an Anthropic Messages upstream (testing's fake);
- `gemini`: the Chat front over a Gemini generateContent upstream (testing's fake, writing
  what the hosted service writes: spaced JSON, usage on every piece; `--gemini-wire compact`
  for compact JSON with usage on the finish alone);

each unstreamed and streamed. Every upstream answers the bench's text (bench/workload.py),
streamed in about 20 pieces, and every answer is checked for it.

    .venv/bin/python bench/fronts_cost.py                        # every case, both modes
    .venv/bin/python bench/fronts_cost.py --case anthropic --mode stream
    .venv/bin/python bench/fronts_cost.py --toolwire-tree ../old  # also an older tree
    .venv/bin/python bench/fronts_cost.py --profile anthropic-stream --requests 3000
    .venv/bin/python bench/fronts_cost.py --text-deltas 300

`--text-deltas N` times, in this process, the Responses and Messages fronts' rendering of N
streamed text deltas (one a network read, as a model streaming token by token sends them) with
their frames made from the builders' text template and through the builders' events alone,
best of 30 rounds. `--profile CASE-MODE` runs the server under cProfile instead (no
valgrind) for `--requests` requests and prints its busiest functions with calls per request
(`--profile-out PATH` keeps the pstats file to compare with `python -m pstats`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import pstats
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
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
    script,
    terminate_on_sigterm,
    toolwire_command,
    toolwire_serve,
    tree_label,
    upstream_command,
    write_config,
    write_json,
)
from bench.workload import SYSTEM_PROMPT, TEXT, USER_PROMPT, request_body

MODES = ("json", "stream")
CASES = ("chat", "responses", "messages", "anthropic", "gemini")
PATHS = {
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "messages": "/v1/messages",
    "anthropic": "/v1/chat/completions",
    "gemini": "/v1/chat/completions",
}
UPSTREAM_FORMATS = {
    "chat": "openai-chat",
    "responses": "openai-chat",
    "messages": "openai-chat",
    "anthropic": "anthropic",
    "gemini": "gemini",
}


@dataclass
class Target:
    """One toolwire server of one tree, counted in every case and mode."""

    key: str
    label: str
    tree: Path | None = None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Instructions per request of the other fronts and translating upstreams.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--case", choices=CASES, action="append", help="cases (default: all)")
    parser.add_argument("--mode", choices=MODES, action="append", help="modes (default: both)")
    parser.add_argument("--requests", type=int, default=200, help="counted requests")
    parser.add_argument("--warmup", type=int, default=30, help="uncounted requests")
    add_toolwire_tree(parser, "also count toolwire from another source tree")
    parser.add_argument("--start-timeout", type=float, default=600, help="seconds to start")
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON to PATH")
    parser.add_argument("--profile", metavar="CASE-MODE", help="cProfile one case instead")
    parser.add_argument("--profile-out", metavar="PATH", help="keep the pstats file here")
    parser.add_argument("--top", type=int, default=30, help="functions the profile lists")
    parser.add_argument("--text-deltas", type=int, metavar="N", help="time N text deltas' frames")
    parser.add_argument(
        "--gemini-wire",
        choices=("hosted", "compact"),
        default="hosted",
        help="the Gemini fake's shape: the hosted service's, or compact (usage on the finish)",
    )
    parser.add_argument("--serve-fake", choices=("anthropic", "gemini"), help=argparse.SUPPRESS)
    parser.add_argument("--profiled", metavar="PATH", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.toolwire_tree = check_trees(parser, args.toolwire_tree)
    args.case = args.case or list(CASES)
    args.mode = args.mode or list(MODES)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--profiled"]:
        return _profiled(Path(argv[1]), argv[2:])
    args = parse_args(argv)
    if args.serve_fake:
        _serve_fake(args.serve_fake, args.port, args.gemini_wire)
        return 0
    if args.profile:
        return _profile(args)
    if args.text_deltas:
        print(text_deltas(args.text_deltas))
        return 0
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    targets = [Target("toolwire", "toolwire")]
    for index, tree in enumerate(args.toolwire_tree, 1):
        targets.append(Target(f"tree{index}", f"toolwire {tree_label(tree)}", tree))
    counts: dict[str, dict[str, dict[str, float]]] = {t.key: {} for t in targets}
    with tempfile.TemporaryDirectory(prefix="toolwire-fronts-") as tmp, terminate_on_sigterm():
        procs = Processes(Path(tmp))
        try:
            for case in args.case:
                config = _config(procs, case, args.gemini_wire)
                for target in targets:
                    for mode in args.mode:
                        n = _count(procs, args, target, config, case, mode)
                        counts[target.key].setdefault(case, {})[mode] = n
                        print(f"{target.label} {case} {mode}: {n / 1000:.0f}k", file=sys.stderr)
        finally:
            procs.close()
    result = {
        "requests": args.requests,
        "labels": {t.key: t.label for t in targets},
        "instructions": counts,
    }
    print(render(result))
    if args.json:
        write_json(Path(args.json), result)
    return 0


# --------------------------------------------------------------------------- upstreams


def _config(procs: Processes, case: str, gemini_wire: str) -> Path:
    """The upstream of `case` started, and a toolwire config pointing at it."""
    kind = UPSTREAM_FORMATS[case]
    if kind == "openai-chat":
        upstream = procs.serve(f"upstream-{case}", upstream_command(), None)
        url = f"{upstream.base}/v1"
    else:
        cmd = script("fronts_cost.py", "--serve-fake", kind, "--gemini-wire", gemini_wire)
        upstream = procs.serve(f"upstream-{case}", cmd, None)
        url = upstream.base
    procs.wait_port(upstream, timeout=30)
    entry: dict[str, Any] = {"name": "fake", "base_url": url, "format": kind}
    if kind != "openai-chat":
        entry["api_key"] = "fake-provider-key"
    config = {"server": {"host": "127.0.0.1"}, "upstreams": [entry], "tools": [EXAMPLE_TOOLS]}
    return write_config(procs.workdir / f"toolwire-{case}.yaml", config)


def _serve_fake(kind: str, port: int, gemini_wire: Any = "hosted") -> None:
    """Run testing's Anthropic or Gemini fake (the latter in `gemini_wire`'s shape) on
    `port`, answering the bench's text."""
    import uvloop

    from testing.anthropic_upstream import FakeAnthropic
    from testing.gemini_upstream import FakeGemini
    from testing.provider_server import Reply

    async def serve() -> None:
        reply = Reply.answer(TEXT)
        fake = FakeAnthropic(reply) if kind == "anthropic" else FakeGemini(reply, wire=gemini_wire)
        fake.requests = deque(maxlen=8)  # type: ignore[assignment]
        fake.paths = deque(maxlen=8)  # type: ignore[assignment]
        fake.headers = deque(maxlen=8)  # type: ignore[assignment]
        server = await _bound(fake, port)
        try:
            await asyncio.Event().wait()
        finally:
            await server.cleanup()

    with contextlib.suppress(KeyboardInterrupt):
        uvloop.run(serve())


async def _bound(fake: Any, port: int) -> Any:
    from aiohttp import web

    runner = web.ServerRunner(web.Server(fake._handle, access_log=None))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner


# --------------------------------------------------------------------------- requests


def body(case: str, stream: bool) -> bytes:
    """The bench's request (bench/workload.py) in the wire format of `case`'s front."""
    if case == "responses":
        return orjson.dumps(request_body(stream, "responses"))
    if case == "messages":
        document: dict[str, Any] = {
            "model": "fake-model",
            "system": SYSTEM_PROMPT,
            "messages": [{"role": "user", "content": USER_PROMPT}],
            "temperature": 0.3,
            "max_tokens": 512,
        }
        if stream:
            document["stream"] = True
        return orjson.dumps(document)
    return orjson.dumps(request_body(stream))


def post(port: int, path: str, data: bytes, count: int) -> None:
    """`count` sequential requests on one connection; each answer must hold the text."""
    word = TEXT.split()[0].encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    try:
        for _ in range(count):
            conn.request("POST", path, data, headers)
            response = conn.getresponse()
            answer = response.read()
            if response.status != 200 or word not in answer:
                raise RuntimeError(f"bad answer {response.status}: {answer[:300]!r}")
    finally:
        conn.close()


# --------------------------------------------------------------------------- counting


def _count(
    procs: Processes,
    args: argparse.Namespace,
    target: Target,
    config: Path,
    case: str,
    mode: str,
) -> float:
    """Instructions per request of one fresh server (so no mode's count holds another's)."""
    out = procs.workdir / f"callgrind.{target.key}.{case}.{mode}"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}.%p"]
    serve = [*cmd, *toolwire_serve(config, tree=target.tree)]
    server = procs.serve(target.key, serve, None, tree=target.tree)
    try:
        procs.wait_ready(server, timeout=args.start_timeout, probe=2)
        data = body(case, mode == "stream")
        port = _port(server)
        post(port, PATHS[case], data, args.warmup)
        _control(server.pid, "-i", "on")
        post(port, PATHS[case], data, args.requests)
        _control(server.pid, "-d")
        total = _dumped(out)
    finally:
        procs.end(server.proc, signal.SIGKILL)
    return total / args.requests


def _port(server: Server) -> int:
    return int(server.base.rsplit(":", 1)[1])


def _control(pid: int, *options: str) -> None:
    subprocess.run(["callgrind_control", *options, str(pid)], check=True, capture_output=True)


def _dumped(out: Path) -> int:
    for _ in range(100):
        total = sum(_totals(path) for path in out.parent.glob(f"{out.name}.*"))
        if total:
            for path in out.parent.glob(f"{out.name}.*"):
                path.unlink()
            return total
        time.sleep(0.1)
    raise RuntimeError(f"no callgrind dump at {out}")


def _totals(path: Path) -> int:
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    return 0


def render(result: dict[str, Any]) -> str:
    counts = result["instructions"]
    labels = result["labels"]
    lines = [f"instructions per request ({result['requests']} sequential requests, callgrind)"]
    lines.append(f"{'server':<24}{'case':<12}{'unstreamed':>14}{'streamed':>14}")
    for key, cases in counts.items():
        for case, modes in cases.items():
            row = f"{labels[key]:<24}{case:<12}"
            for mode in MODES:
                n = modes.get(mode)
                row += f"{n / 1000:>13.0f}k" if n is not None else f"{'-':>14}"
            lines.append(row)
    return "\n".join(lines)


# --------------------------------------------------------------------------- text deltas


def text_deltas(count: int, rounds: int = 30) -> str:
    """Microseconds per streamed text delta of the Responses and Messages fronts' renderers,
    with the builders' text template and without it (every frame from its event)."""
    from proxy.fronts.messages.render import MessageBuilder
    from proxy.fronts.renderers import BuilderStream
    from proxy.fronts.responses.builder import ResponseBuilder
    from proxy.fronts.responses.plan import ResponsePlan
    from proxy.turn.events import ContentDelta

    deltas = [ContentDelta("tok ", raw=b"tok ") for _ in range(count)]
    plan = ResponsePlan(model="m", echo={}, labels={}, show_rounds=False)
    builders = {"responses": lambda: ResponseBuilder(plan), "messages": lambda: MessageBuilder("m")}
    lines = [f"microseconds per text delta ({count} deltas, best of {rounds} rounds)"]
    for name, make in builders.items():
        row = f"{name:<12}"
        for template in (True, False):
            best = float("inf")
            for _ in range(rounds):
                builder = make()
                if not template:
                    builder.text_frame = lambda delta: None  # type: ignore[method-assign]
                stream = BuilderStream(builder)
                started = time.perf_counter()
                for delta in deltas:
                    stream.frames(delta)
                best = min(best, time.perf_counter() - started)
            label = "template" if template else "events"
            row += f"  {label} {best / count * 1e6:.2f}"
        lines.append(row)
    return "\n".join(lines)


# --------------------------------------------------------------------------- profiling


def _profile(args: argparse.Namespace) -> int:
    case, _, mode = args.profile.partition("-")
    if case not in CASES or mode not in MODES:
        print(f"--profile takes CASE-MODE, e.g. anthropic-stream, not {args.profile!r}")
        return 2
    with tempfile.TemporaryDirectory(prefix="toolwire-profile-") as tmp, terminate_on_sigterm():
        procs = Processes(Path(tmp))
        out = Path(args.profile_out or Path(tmp) / "profile.pstats").resolve()
        try:
            config = _config(procs, case, args.gemini_wire)
            serve = toolwire_serve(config)[len(toolwire_command()) :]
            server = procs.serve(
                "toolwire", script("fronts_cost.py", "--profiled", str(out), *serve), None
            )
            procs.wait_ready(server, timeout=args.start_timeout)
            port, data = _port(server), body(case, mode == "stream")
            post(port, PATHS[case], data, args.warmup)
            server.proc.send_signal(signal.SIGUSR1)
            post(port, PATHS[case], data, args.requests)
            server.proc.send_signal(signal.SIGUSR2)
            deadline = time.monotonic() + 60
            while not out.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            procs.close()
        stats = pstats.Stats(str(out))
        print(f"cProfile of {args.requests} {case} {mode} requests (calls per request):")
        _print_top(stats, args.requests, args.top)
    return 0


def _profiled(out: Path, serve: list[str]) -> int:
    """Run `toolwire` with `serve`'s arguments, profiling from SIGUSR1 to SIGUSR2 (which
    writes the pstats file to `out`): the requests only, not the start."""
    import cProfile

    from proxy.server.cli import main as toolwire

    profile = cProfile.Profile()

    def stop(signum: int, frame: Any) -> None:
        profile.disable()
        profile.dump_stats(str(out))

    signal.signal(signal.SIGUSR1, lambda signum, frame: profile.enable())
    signal.signal(signal.SIGUSR2, stop)
    sys.argv = ["toolwire", *serve]
    return toolwire()


def _print_top(stats: pstats.Stats, requests: int, top: int) -> None:
    rows = []
    for (filename, line, name), (_, calls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{Path(filename).name}:{line}({name})"
        rows.append((tottime, calls / requests, cumtime, where))
    rows.sort(reverse=True)
    print(f"{'tottime s':>10}{'calls/req':>11}{'cumtime s':>11}  function")
    for tottime, per, cumtime, where in rows[:top]:
        print(f"{tottime:>10.3f}{per:>11.2f}{cumtime:>11.3f}  {where}")


if __name__ == "__main__":
    sys.exit(main())
