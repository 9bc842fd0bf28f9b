"""Where a tool round's time goes, per tool source kind: cProfile of `toolwire serve`.

    .venv/bin/python bench/loop_profile.py --kind mcp-stdio            # top functions
    .venv/bin/python bench/loop_profile.py --kind openapi --sort tottime --top 60
    .venv/bin/python bench/loop_profile.py --kind python --out prof.pstats
    .venv/bin/python bench/loop_profile.py --kind python-thread  # the tool in the thread pool
    .venv/bin/python bench/loop_profile.py --kind plain [--stream]  # a plain request, no tool

`--kind plain` profiles the plain flow of `bench/instructions.py` and `bench/overhead.py`
instead: the fake upstream answering text, the example tools injected, the benchmark request
(`--stream` for its streamed form).

The tool-loop bench's model and tool (`bench/tool_loop.py`, one source of `--kind`) and one
`toolwire serve` run as child processes; the proxy runs under cProfile, switched on only
around `--requests` sequential requests after `--warmup` (SIGUSR1 on, SIGUSR2 off and dump).
Call counts are divided by the request count: what one request (two model calls and one tool
round) calls, independent of how busy the machine is (times are not, on a shared machine:
compare call counts and `bench/instructions.py --flow tool-loop --kind KIND` between trees).
"""

from __future__ import annotations

import argparse
import http.client
import os
import pstats
import signal
import sys
import tempfile
import time
from pathlib import Path

import orjson

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.harness import (
    EXAMPLE_TOOLS,
    Processes,
    script,
    toolwire_serve,
    upstream_command,
    write_config,
)
from bench.loop_clients import QUESTION, check_answer
from bench.loop_servers import toolwire_source
from bench.workload import TEXT, request_body

KINDS = ("python", "python-thread", "mcp-stdio", "mcp-http", "openapi", "plain")


def profiled_serve() -> None:
    """`toolwire serve ARGS` with a profiler that SIGUSR1 starts and SIGUSR2 stops and dumps
    to $TOOLWIRE_PROFILE_OUT (this module's `--serve` mode; the bench's child process)."""
    import cProfile

    from proxy.server.cli import main

    profiler = cProfile.Profile()
    out = os.environ["TOOLWIRE_PROFILE_OUT"]

    def start(*_: object) -> None:
        profiler.enable()

    def stop(*_: object) -> None:
        profiler.disable()
        profiler.dump_stats(out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    sys.argv = ["toolwire", *sys.argv[2:]]
    sys.exit(main())


def _post(port: int, count: int, kind: str, stream: bool) -> None:
    if kind == "plain":
        body = orjson.dumps(request_body(stream))
    else:
        body = orjson.dumps({"model": "fake-model", "messages": QUESTION})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        for _ in range(count):
            conn.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
            response = conn.getresponse()
            answer = response.read()
            if kind == "plain":
                whole = b"[DONE]" if stream else TEXT[:20].encode()
                problem = "" if response.status == 200 and whole in answer else "bad answer"
            else:
                problem = check_answer(response.status, answer)
            if problem:
                raise RuntimeError(f"{problem}: {answer[:200]!r}")
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kind", choices=KINDS, default="mcp-stdio")
    parser.add_argument("--stream", action="store_true", help="--kind plain: streamed")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--sort", default="cumulative", help="pstats sort key")
    parser.add_argument("--top", type=int, default=50)
    parser.add_argument("--out", help="keep the pstats file here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="toolwire-prof-") as tmp:
        procs = Processes(Path(tmp))
        out = Path(args.out or Path(tmp) / "proxy.pstats").resolve()
        procs.env["TOOLWIRE_PROFILE_OUT"] = str(out)
        try:
            plain = args.kind == "plain"
            model = upstream_command() if plain else script("loop_upstream.py")
            upstream = procs.serve("upstream", model, None)
            procs.wait_ready(upstream, timeout=60)
            mcp_url = rest = ""
            if args.kind == "mcp-http":
                mcp = procs.serve("mcp", script("loop_mcp_server.py"), None, port_option="--http")
                procs.wait_port(mcp)
                mcp_url = f"{mcp.base}/mcp"
            elif args.kind == "openapi":
                service = procs.serve("rest", script("loop_openapi_service.py"), None)
                procs.wait_ready(service, "/openapi.json", timeout=60)
                rest = service.base
            config = {
                "server": {"host": "127.0.0.1"},
                "upstreams": [{"name": "fake", "base_url": f"{upstream.base}/v1"}],
                "tools": [EXAMPLE_TOOLS if plain else toolwire_source(args.kind, mcp_url, rest)],
            }
            path = write_config(Path(tmp) / "toolwire.yaml", config)
            cmd = [sys.executable, __file__, "--serve", *toolwire_serve(path)[1:]]
            proxy = procs.serve("toolwire", cmd, None)
            procs.wait_ready(proxy, "/readyz", timeout=60)
            port = int(proxy.base.rsplit(":", 1)[1])
            _post(port, args.warmup, args.kind, args.stream)
            os.kill(proxy.pid, signal.SIGUSR1)
            _post(port, args.requests, args.kind, args.stream)
            os.kill(proxy.pid, signal.SIGUSR2)
            deadline = time.monotonic() + 30
            while not out.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)
        finally:
            procs.close()
        stats = pstats.Stats(str(out))
        calls = sum(v[1] for v in stats.stats.values())  # type: ignore[attr-defined]
        print(f"{args.kind}: {calls / args.requests:,.0f} Python calls per request")
        stats.sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        profiled_serve()
    else:
        sys.exit(main())
