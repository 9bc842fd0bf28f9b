"""What one tool call costs through Toolwire's registry, against calling the server directly.

    .venv/bin/python bench/tool_sources.py                    # table + PASS/MISS lines
    .venv/bin/python bench/tool_sources.py --calls 300 --duration 1
    .venv/bin/python bench/tool_sources.py --profile 2000     # and where Toolwire's time goes
    .venv/bin/python bench/tool_sources.py --boot [--servers 50]  # boot time and memory with
                                       # many MCP servers, eager and lazy (bench/source_boot.py)

What is measured
----------------
Three servers, each called two ways in the same run:

* MCP over stdio     the demo server of `testing/mcp_servers.py`, tool `echo`.
    toolwire           an `McpSource` (`mcp: {command: [python, -m, testing.mcp_servers,
                       demo]}`) registered in a `ToolRegistry`, called through an `Executor`
                       as the tool loop does: `execute_many([(tool, ToolCall(id, wire name,
                       arguments as JSON text))])`, so argument repair and validation, the
                       JSON-schema check, the session call, result conversion and the
                       execution log are all counted.
    direct             an `mcp` SDK `ClientSession` over `stdio_client`, `call_tool("echo")`.
  Each side has its own server process (a stdio server has exactly one client).
* MCP over Streamable HTTP   the same demo server, served by uvicorn in its own process; the
                       Toolwire source and the direct `ClientSession` (`streamable_http_client`)
                       are two sessions on that one server.
* OpenAPI            the FastAPI shop of `testing/openapi_service.py` in its own process,
                     operation `update_item` (PATCH /items/{item_id}?reason=… with a JSON body:
                     path, query and body parameters).
    toolwire           an `OpenApiSource` on the service's /openapi.json, called as above.
    direct             one aiohttp `ClientSession`, `PATCH /items/1?reason=bench` with the JSON
                       body, the response read and parsed with orjson.

Per path: `--warmup` calls, then `--rounds` rounds; in each round every path runs `--calls`
sequential calls (latency, pooled over rounds into p50/p99) and then a closed loop of 16
concurrent callers for `--duration` seconds (calls/s; the median round is shown). The paths
run one after another, Toolwire before direct in even rounds and after it in odd ones, so
drift and leftovers of the previous burst hit both alike. "cpu/call" is this process's CPU time
(user+system, all threads) per sequential call: the client side's own cost, since every server
runs in another process. Each call's result is checked; a path with failures is marked `!`.

Method
------
* Servers are child processes on ephemeral 127.0.0.1 ports (the child binds port 0 and
  prints it), each in its own process group, killed in a `finally`. stdio servers are spawned
  by the SDK (Toolwire's source stops its server's whole process group on close).
* With `os.sched_setaffinity` (and at least 2 CPUs), every server runs on CPU A (they are
  started while this process is pinned there, and inherit it) and the clients on CPU B, so a
  client never competes with the server it measures. The output says when nothing is pinned.
* The event loop is uvloop (as under `toolwire serve`) for both sides.
* Goal: Toolwire's p50 latency at most 1.3x the direct call's, per server.
  The p99 ratio and "time per call @16" (direct calls/s over Toolwire's) are for information.
* The mcp SDK's Streamable HTTP client closes each call's SSE response as soon as the answer
  arrives, before the server ends it, so both MCP HTTP paths open a new TCP connection per
  call (and leave a TIME_WAIT socket); that is part of both numbers, and makes them noisy.
* `--profile N` afterwards runs N sequential Toolwire calls per path under cProfile and
  prints the functions with the most own time, to show where the per-call overhead goes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import io
import os
import pstats
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from registry import (
    Executor,
    McpSource,
    McpSourceConfig,
    OpenApiSource,
    OpenApiSourceConfig,
    ToolCall,
    ToolRegistry,
)

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.cpu import Cpus
from bench.harness import Processes, Server

ROOT = Path(__file__).resolve().parents[1]
GOAL = 1.3
CONCURRENCY = 16
ECHO_TEXT = "the quick brown fox"
PATCH: dict[str, Any] = {"item_id": 1, "reason": "bench", "price": 25.0}
STDIO_SERVER = ["python", "-m", "testing.mcp_servers", "demo"]

# A child that binds an ephemeral loopback port, prints it, then serves the app there.
_SERVE = """
import socket, uvicorn
{imports}
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
print(sock.getsockname()[1], flush=True)
config = uvicorn.Config({app}, log_level="warning", timeout_graceful_shutdown=1)
uvicorn.Server(config).run(sockets=[sock])
"""

Call = Callable[[], Awaitable[None]]


# ---------------------------------------------------------------------------------------------
# Processes


def serve_asgi(procs: Processes, name: str, imports: str, app: str, timeout_s: float = 30) -> str:
    """Start an ASGI app in a child on an ephemeral port; its base URL once it accepts."""
    code = _SERVE.format(imports=imports, app=app)
    # Not pinned here: a server inherits the CPU this process is on when it starts it.
    proc = procs.start(name, [sys.executable, "-c", code], None, stdout=subprocess.PIPE)
    deadline = time.monotonic() + timeout_s
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
    line = proc.stdout.readline().decode().strip() if ready else ""
    if not line.isdigit():
        raise RuntimeError(f"{name} did not report its port:\n{procs.log_tail(name)}")
    server = Server(name, f"http://127.0.0.1:{line}", proc)
    procs.wait_port(server, max(0.0, deadline - time.monotonic()))
    return server.base


@dataclass(frozen=True)
class Pinning:
    """CPU A for the servers, CPU B for this process (the clients), when the OS allows it."""

    cpus: Cpus

    def for_servers(self) -> None:
        if self.cpus.server is not None:
            os.sched_setaffinity(0, {self.cpus.server})

    def for_clients(self) -> None:
        self.cpus.pin_self()

    def describe(self) -> str:
        if not self.cpus.pinned:
            return "not pinned (no sched_setaffinity, fewer than 2 CPUs, or --no-pin)"
        return f"servers on CPU {self.cpus.server}, clients (this process) on CPU {self.cpus.other}"


# ---------------------------------------------------------------------------------------------
# The six ways to call


@dataclass
class Target:
    """One way of making the call, and what was measured for it."""

    server: str
    way: str
    call: Call
    latencies: list[float] = field(default_factory=list)
    cpu_s: float = 0.0
    rates: list[float] = field(default_factory=list)
    failures: int = 0
    first_failure: str | None = None

    @property
    def label(self) -> str:
        return f"{self.server} / {self.way}"


class Failed(Exception):
    """A call's result was not the expected one."""


def toolwire_call(
    executor: Executor, registry: ToolRegistry, wire: str, arguments: dict[str, Any], check: str
) -> Call:
    """What the loop does for one registry call: look the tool up, execute it, read the text."""
    text = orjson.dumps(arguments).decode()
    counter = iter(range(1 << 62))

    async def call() -> None:
        tool = registry.resolve(wire)
        assert tool is not None, wire
        (result,) = await executor.execute_many(
            [(tool, ToolCall(f"call_{next(counter)}", wire, text))]
        )
        if result.is_error or check not in result.content:
            raise Failed(result.content[:200])

    return call


def mcp_direct_call(session: ClientSession) -> Call:
    async def call() -> None:
        result = await session.call_tool("echo", {"text": ECHO_TEXT})
        first = result.content[0] if result.content else None
        if result.is_error or not isinstance(first, TextContent) or first.text != ECHO_TEXT:
            raise Failed(str(result)[:200])

    return call


def http_direct_call(http: aiohttp.ClientSession, base_url: str) -> Call:
    url = f"{base_url}/items/{PATCH['item_id']}"
    params = {"reason": PATCH["reason"]}
    body = orjson.dumps({"price": PATCH["price"]})
    headers = {"Content-Type": "application/json"}

    async def call() -> None:
        async with http.patch(url, params=params, data=body, headers=headers) as response:
            value = orjson.loads(await response.read())
        if response.status != 200 or value.get("reason") != PATCH["reason"]:
            raise Failed(f"HTTP {response.status}: {value}")

    return call


def sources(mcp_url: str, shop_url: str) -> list[McpSource | OpenApiSource]:
    """Toolwire's sources of the three servers, as a config would declare them."""
    configs: list[tuple[type[McpSource] | type[OpenApiSource], Any, dict[str, Any]]] = [
        (McpSource, McpSourceConfig, {"mcp": {"command": STDIO_SERVER}, "namespace": "stdio"}),
        (McpSource, McpSourceConfig, {"mcp": {"url": f"{mcp_url}/mcp"}, "namespace": "http"}),
        (
            OpenApiSource,
            OpenApiSourceConfig,
            {"openapi": {"spec": f"{shop_url}/openapi.json"}, "namespace": "shop"},
        ),
    ]
    return [kind(config.model_validate(raw), base_dir=ROOT) for kind, config, raw in configs]


@contextlib.asynccontextmanager
async def setup(procs: Processes, pinning: Pinning) -> AsyncIterator[list[Target]]:
    """Start the servers and open every client; yields the six paths, closes all after."""
    pinning.for_servers()
    app = "build('demo').streamable_http_app()"
    mcp_url = serve_asgi(procs, "mcp-http", "from testing.mcp_servers import build", app)
    shop = "from testing.openapi_service import create_shop"
    shop_url = serve_asgi(procs, "shop", shop, "create_shop()")
    registry = ToolRegistry()
    # The proxy's executor, as create_app builds it with the default `execution:` settings.
    executor = Executor(default_timeout_s=30.0, max_workers=16)
    async with contextlib.AsyncExitStack() as stack:
        stack.callback(executor.close)
        for source in sources(mcp_url, shop_url):
            stack.push_async_callback(source.aclose)
            await source.start(registry)
        # `python` is this interpreter, as Toolwire's source spawns it.
        params = StdioServerParameters(command=sys.executable, args=STDIO_SERVER[1:], cwd=str(ROOT))
        stdio_session = await _session(stack, stdio_client(params))
        http_session = await _session(stack, streamable_http_client(f"{mcp_url}/mcp"))
        connector = aiohttp.TCPConnector(limit=100)
        http = await stack.enter_async_context(aiohttp.ClientSession(connector=connector))
        # Every server and the stdio servers spawned above run on CPU A; the clients from now on
        # run on CPU B.
        pinning.for_clients()

        def ours(wire: str, arguments: dict[str, Any], check: str) -> Call:
            return toolwire_call(executor, registry, wire, arguments, check)

        echo = {"text": ECHO_TEXT}
        yield [
            Target("MCP stdio", "toolwire", ours("stdio_echo", echo, ECHO_TEXT)),
            Target("MCP stdio", "direct", mcp_direct_call(stdio_session)),
            Target("MCP HTTP", "toolwire", ours("http_echo", echo, ECHO_TEXT)),
            Target("MCP HTTP", "direct", mcp_direct_call(http_session)),
            Target("OpenAPI", "toolwire", ours("shop_update_item", PATCH, '"reason":"bench"')),
            Target("OpenAPI", "direct", http_direct_call(http, shop_url)),
        ]


async def _session(stack: contextlib.AsyncExitStack, transport: Any) -> ClientSession:
    """An initialised MCP client session over `transport`, closed with `stack`."""
    streams = await stack.enter_async_context(transport)
    session = await stack.enter_async_context(ClientSession(*streams[:2]))
    await session.initialize()
    return session


# ---------------------------------------------------------------------------------------------
# Measuring


async def guarded(path: Target) -> bool:
    try:
        await path.call()
    except Exception as exc:
        # Any failure of a call is counted and shown; the run goes on.
        path.failures += 1
        path.first_failure = path.first_failure or f"{type(exc).__name__}: {exc}"
        return False
    return True


async def sequential(path: Target, calls: int) -> None:
    gc.collect()
    cpu = time.process_time()
    for _ in range(calls):
        started = time.perf_counter()
        await guarded(path)
        path.latencies.append(time.perf_counter() - started)
    path.cpu_s += time.process_time() - cpu


async def concurrent(path: Target, seconds: float) -> None:
    gc.collect()
    done = 0
    stop_at = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < stop_at:
            if await guarded(path):
                done += 1

    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for _ in range(CONCURRENCY):
            group.create_task(worker())
    path.rates.append(done / (time.perf_counter() - started))


async def measure(paths: list[Target], args: argparse.Namespace) -> None:
    for path in paths:
        for _ in range(args.warmup):
            await guarded(path)
        path.failures, path.first_failure = 0, None
    for number in range(args.rounds):
        # Toolwire first in even rounds, direct first in odd ones: neither always follows
        # the other's burst of concurrent calls.
        ordered = paths if number % 2 == 0 else _swap_pairs(paths)
        for path in ordered:
            await sequential(path, args.calls)
        for path in ordered:
            await concurrent(path, args.duration)


def _swap_pairs(paths: list[Target]) -> list[Target]:
    return [path for pair in zip(paths[1::2], paths[::2], strict=True) for path in pair]


async def profile(paths: list[Target], calls: int) -> str:
    out = io.StringIO()
    for path in paths:
        if path.way != "toolwire":
            continue
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(calls):
            await guarded(path)
        profiler.disable()
        out.write(f"\n--- {path.label}: {calls} sequential calls, top own time ---\n")
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(18)
    return out.getvalue()


# ---------------------------------------------------------------------------------------------
# Reporting


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(paths: list[Target], args: argparse.Namespace, pinning: Pinning) -> None:
    print(
        f"one tool call, {args.rounds} rounds x {args.calls} sequential calls per path "
        f"(after {args.warmup} warm-up), {CONCURRENCY} concurrent for {args.duration:g} s per "
        f"round; {pinning.describe()}; {type(asyncio.get_running_loop()).__module__} loop"
    )
    header = f"{'server':<10} {'path':<9} {'p50 ms':>8} {'p99 ms':>8} {'cpu/call us':>12} "
    header += f"{'calls/s @16':>12}"
    print(header)
    print("-" * len(header))
    for path in paths:
        mark = "!" if path.failures else " "
        print(
            f"{path.server:<10} {path.way:<9} {percentile(path.latencies, 0.5) * 1e3:8.3f} "
            f"{percentile(path.latencies, 0.99) * 1e3:8.3f} "
            f"{path.cpu_s / len(path.latencies) * 1e6:12.0f} "
            f"{statistics.median(path.rates):12.0f}{mark}"
        )
    print()
    for ours, direct in zip(paths[::2], paths[1::2], strict=True):
        p50 = percentile(ours.latencies, 0.5) / percentile(direct.latencies, 0.5)
        p99 = percentile(ours.latencies, 0.99) / percentile(direct.latencies, 0.99)
        rate = statistics.median(direct.rates) / statistics.median(ours.rates)
        added = (percentile(ours.latencies, 0.5) - percentile(direct.latencies, 0.5)) * 1e6
        passed = p50 <= GOAL and not ours.failures and not direct.failures
        print(
            f"{'PASS' if passed else 'MISS'} {ours.server:<10} toolwire/direct p50 {p50:.2f}x "
            f"(goal <= {GOAL}x, {added:+.0f} us), p99 {p99:.2f}x, "
            f"time per call @16 {rate:.2f}x"
        )
    for path in paths:
        if path.failures:
            print(f"! {path.label}: {path.failures} failed calls, first: {path.first_failure}")


async def run(args: argparse.Namespace, procs: Processes) -> bool:
    """Measure and report; False when calls failed (a missed goal is not a failure)."""
    pinning = Pinning(Cpus.detect(not args.no_pin))
    async with setup(procs, pinning) as paths:
        await measure(paths, args)
        report(paths, args, pinning)
        if args.profile:
            print(await profile(paths, args.profile))
    return not any(path.failures for path in paths)


def main() -> None:
    if "--boot" in sys.argv[1:]:
        from bench.source_boot import main as boot

        sys.exit(boot(sys.argv[1:]))
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=400, help="sequential calls per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=200, help="warm-up calls per path")
    parser.add_argument("--duration", type=float, default=1.5, help="seconds at 16 concurrent")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="profile N calls")
    parser.add_argument("--no-pin", action="store_true", help="do not pin CPUs")
    args = parser.parse_args()
    try:
        import uvloop
    except ImportError:
        runner: Callable[..., Any] = asyncio.run
    else:
        runner = uvloop.run
    # SIGTERM unwinds like Ctrl-C, so the servers are killed in the `finally` below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="toolwire-bench-") as logdir:
        procs = Processes(Path(logdir))
        try:
            ok = runner(run(args, procs))
        finally:
            procs.close()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
