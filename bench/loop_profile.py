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

`--toolwire-tree DIR` (repeatable) profiles the Toolwire of another source tree too, one after
the other against the same model and tool servers: each tree's calls per request, then the
functions whose calls per request differ most between this tree and each other one.

    .venv/bin/python bench/loop_profile.py --kind openapi --toolwire-tree ../at-start
"""

from __future__ import annotations

import argparse
import http.client
import os
import pstats
import re
import signal
import sys
import tempfile
import time
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
    toolwire_serve,
    tree_label,
    upstream_command,
    write_config,
)
from bench.loop_clients import QUESTION, check_answer
from bench.loop_servers import toolwire_source
from bench.trees import tree_tools
from bench.workload import TEXT, request_body

_ADDRESS = re.compile(r" at 0x[0-9a-f]+")
"""A builtin's address in its name (`__new__ of type object at 0x...`): not the same per run."""

KINDS = ("python", "python-thread", "mcp-stdio", "mcp-http", "openapi", "plain")


def profiled_serve() -> None:
    """`toolwire serve ARGS` with a profiler that SIGUSR1 starts and SIGUSR2 stops and dumps
    to $TOOLWIRE_PROFILE_OUT (this module's `--serve` mode; the bench's child process)."""
    import cProfile

    tree = os.environ.get("TOOLWIRE_PROFILE_TREE")
    if tree:  # another tree's toolwire: its packages before this one's
        sys.path.insert(0, tree)
    from proxy.server.cli import main

    profiler = cProfile.Profile()
    out = os.environ["TOOLWIRE_PROFILE_OUT"]

    def start(*_: object) -> None:
        profiler.enable()

    def stop(*_: object) -> None:
        profiler.disable()
        profiler.dump_stats(out + ".part")
        os.replace(out + ".part", out)  # whole when it appears: the bench waits for it

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
    parser.add_argument("--out", help="keep the pstats file here (this tree's)")
    add_toolwire_tree(parser, "also profile toolwire from another source tree (e.g. a worktree)")
    args = parser.parse_args(argv)
    trees: list[Path | None] = [None, *check_trees(parser, args.toolwire_tree)]
    with tempfile.TemporaryDirectory(prefix="toolwire-prof-") as tmp:
        procs = Processes(Path(tmp))
        outs = [Path(tmp) / f"proxy{index}.pstats" for index in range(len(trees))]
        if args.out:
            outs[0] = Path(args.out).resolve()
        try:
            config = _config(procs, args.kind)
            for index, (tree, out) in enumerate(zip(trees, outs, strict=True)):
                own = {**config, "tools": tree_tools(config["tools"], tree)} if tree else config
                path = write_config(Path(tmp) / f"toolwire{index}.yaml", own)
                _profile(procs, f"toolwire{index}", path, tree, out, args)
        finally:
            procs.close()
        stats = [pstats.Stats(str(out)) for out in outs]
        # The commit and the directory: two worktrees of one commit may differ.
        labels = ["this tree", *(f"{tree_label(tree)} {tree}" for tree in trees[1:] if tree)]
        for label, one in zip(labels, stats, strict=True):
            calls = sum(v[1] for v in one.stats.values())  # type: ignore[attr-defined]
            print(f"{args.kind} ({label}): {calls / args.requests:,.0f} Python calls per request")
        if len(stats) == 1:
            stats[0].sort_stats(args.sort).print_stats(args.top)
        for label, other in zip(labels[1:], stats[1:], strict=True):
            print(f"\ncalls per request, {label} -> this tree (the {args.top} largest changes)")
            for line in _changes(other, stats[0], args.requests, args.top):
                print(line)
    return 0


def _config(procs: Processes, kind: str) -> dict[str, Any]:
    """The model (and the tool's server) started; the proxy's config for `kind`."""
    plain = kind == "plain"
    upstream = procs.serve(
        "upstream", upstream_command() if plain else script("loop_upstream.py"), None
    )
    procs.wait_ready(upstream, timeout=60)
    mcp_url = rest = ""
    if kind == "mcp-http":
        mcp = procs.serve("mcp", script("loop_mcp_server.py"), None, port_option="--http")
        procs.wait_port(mcp)
        mcp_url = f"{mcp.base}/mcp"
    elif kind == "openapi":
        service = procs.serve("rest", script("loop_openapi_service.py"), None)
        procs.wait_ready(service, "/openapi.json", timeout=60)
        rest = service.base
    return {
        "server": {"host": "127.0.0.1"},
        "upstreams": [{"name": "fake", "base_url": f"{upstream.base}/v1"}],
        "tools": [EXAMPLE_TOOLS if plain else toolwire_source(kind, mcp_url, rest)],
    }


def _profile(
    procs: Processes,
    name: str,
    config: Path,
    tree: Path | None,
    out: Path,
    args: argparse.Namespace,
) -> None:
    """Serve `config` with the toolwire of `tree` (None: this one) under the profiler and dump
    `args.requests` requests' profile to `out`; the server is stopped after."""
    procs.env["TOOLWIRE_PROFILE_OUT"] = str(out)
    if tree is None:
        procs.env.pop("TOOLWIRE_PROFILE_TREE", None)
    else:
        procs.env["TOOLWIRE_PROFILE_TREE"] = str(tree)
    cmd = [sys.executable, __file__, "--serve", *toolwire_serve(config)[1:]]
    proxy: Server = procs.serve(name, cmd, None, tree=tree)
    procs.wait_ready(proxy, "/readyz", timeout=60)
    port = int(proxy.base.rsplit(":", 1)[1])
    _post(port, args.warmup, args.kind, args.stream)
    os.kill(proxy.pid, signal.SIGUSR1)
    _post(port, args.requests, args.kind, args.stream)
    os.kill(proxy.pid, signal.SIGUSR2)
    deadline = time.monotonic() + 30
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    procs.end(proxy.proc)


def _changes(before: pstats.Stats, after: pstats.Stats, requests: int, top: int) -> list[str]:
    """The functions whose calls per request differ most, as table lines."""
    old, new = _per_function(before, requests), _per_function(after, requests)
    changed = {name: new.get(name, 0.0) - old.get(name, 0.0) for name in old.keys() | new.keys()}
    ranked = sorted(changed.items(), key=lambda item: -abs(item[1]))[:top]
    return [
        f"{delta:+8.1f} {old.get(name, 0.0):8.1f} -> {new.get(name, 0.0):8.1f}  {name}"
        for name, delta in ranked
        if abs(delta) >= 0.5
    ]


def _per_function(stats: pstats.Stats, requests: int) -> dict[str, float]:
    """Calls per request by function, named by path (from the tree or site-packages) and name,
    not line, so that the same function of two trees has one name (a module's comprehensions
    and lambdas are summed)."""
    calls: dict[str, float] = {}
    for (path, _, function), row in stats.stats.items():  # type: ignore[attr-defined]
        path = path.split("site-packages/")[-1]
        for marker in ("/proxy/", "/registry/", "/policies/", "/bench/"):
            if marker in path:
                path = marker[1:] + path.split(marker, 1)[1]
                break
        name = f"{path}:{function}" if path != "~" else _ADDRESS.sub("", function)
        calls[name] = calls.get(name, 0.0) + row[1] / requests
    return calls


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        profiled_serve()
    else:
        sys.exit(main())
