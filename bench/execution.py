"""Tool execution throughput: 100 concurrent calls per tool kind and execution mode.

    .venv/bin/python bench/execution.py               # the table
    .venv/bin/python bench/execution.py --calls 100 --rounds 5

Reproduces the shape of ToolRegistry's concurrency experiment: for each tool kind,
`--rounds` batches of `--calls` concurrent calls through `Executor.execute_many`, after a
warm-up batch (so worker processes and connections exist); the best round's calls/s is
reported. Every call must succeed, or the bench exits 1.

Tool kinds:
* native      a module-level sync function (a + b)
* class       bound methods of an instance, registered with `register_class`
* http        an OpenAPI-like JSON service (aiohttp, in its own process) called by an async
              tool using aiohttp
* mcp         examples/mcp_server.py over stdio, through the MCP source

Columns are the executor's default `mode`. That mode governs sync tools only; async tools
(http, mcp) run inline on the event loop in both, as they should. The `forced` rows set
the http tool's own `execution_mode`, so it runs in a thread (own event loop per call) or a
worker process (own event loop per call) like ToolRegistry's older design did; MCP tools
hold a live session and cannot leave the event loop (process mode falls back to threads).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp

from registry import Executor, Tool, ToolCall, ToolRegistry
from registry.classes import register_class
from registry.mcp import McpSource, McpSourceConfig

REPO = Path(__file__).resolve().parents[1]

Batch = list[tuple[Tool, ToolCall]]


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Calculator:
    """Arithmetic as methods."""

    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def multiply(self, a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b


async def remote_add(base_url: str, a: int, b: int) -> int:
    """Add on the HTTP service, with a session of its own (picklable for worker processes)."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{base_url}/add", json={"a": a, "b": b}) as response,
    ):
        response.raise_for_status()
        return int((await response.json())["result"])


def serve_http(port: int) -> None:
    """The OpenAPI-like service: POST /add {a, b} -> {result}."""
    from aiohttp import web

    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response({"result": body["a"] + body["b"]})

    app = web.Application()
    app.router.add_post("/add", handle)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


@asynccontextmanager
async def http_service() -> AsyncIterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = await asyncio.create_subprocess_exec(sys.executable, __file__, "--serve", str(port))
    base_url = f"http://127.0.0.1:{port}"
    try:
        async with asyncio.timeout(20), aiohttp.ClientSession() as session:
            while True:
                try:
                    async with session.post(f"{base_url}/add", json={"a": 1, "b": 1}):
                        break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.05)
        yield base_url
    finally:
        server.terminate()
        await server.wait()


def http_tool(base_url: str, session: aiohttp.ClientSession) -> Tool:
    async def add_remote(a: int, b: int) -> int:
        """Add two integers on the HTTP service."""
        async with session.post(f"{base_url}/add", json={"a": a, "b": b}) as response:
            response.raise_for_status()
            return int((await response.json())["result"])

    return Tool.from_function(add_remote)


def forced_http_tool(base_url: str, mode: str) -> Tool:
    import functools

    fn = functools.partial(remote_add, base_url)
    fn.__name__ = "remote_add"  # type: ignore[attr-defined]
    fn.__doc__ = remote_add.__doc__
    return Tool.from_function(fn, name="remote_add", execution_mode=mode)  # type: ignore[arg-type]


async def measure(executor: Executor, make_batch: Callable[[int], Batch], rounds: int) -> float:
    """Best calls/s over `rounds` batches, after one warm-up batch; exits on any failure."""
    best = 0.0
    for round_number in range(rounds + 1):
        batch = make_batch(round_number)
        started = time.perf_counter()
        results = await executor.execute_many(batch)
        elapsed = time.perf_counter() - started
        failed = [r.content for r in results if r.is_error]
        if failed or len(results) != len(batch):
            sys.exit(f"{len(failed)} of {len(batch)} calls failed: {failed[:3]}")
        if round_number:
            best = max(best, len(batch) / elapsed)
    return best


def batch_of(tools: list[Tool], calls: int) -> Callable[[int], Batch]:
    def make(round_number: int) -> Batch:
        return [
            (tools[i % len(tools)], ToolCall(f"r{round_number}c{i}", "t", {"a": i, "b": 2}))
            for i in range(calls)
        ]

    return make


async def run(calls: int, rounds: int) -> None:
    registry = ToolRegistry()
    class_tools = register_class(registry, Calculator())
    rows: dict[str, dict[str, float]] = {}
    async with http_service() as base_url, aiohttp.ClientSession() as session:
        mcp = McpSource(
            McpSourceConfig.model_validate(
                {
                    "mcp": {"command": [sys.executable, str(REPO / "examples/mcp_server.py")]},
                    "namespace": "notes",
                }
            ),
            base_dir=REPO,
        )
        await mcp.start(registry)
        try:
            roll = registry.get_tool("notes.roll_dice")
            kinds: dict[str, Callable[[int], Batch]] = {
                "native function": batch_of([Tool.from_function(add)], calls),
                "class methods": batch_of(class_tools, calls),
                "http service (inline)": batch_of([http_tool(base_url, session)], calls),
                "mcp server, stdio (inline)": lambda r: [
                    (roll, ToolCall(f"r{r}c{i}", "roll", {"sides": 6})) for i in range(calls)
                ],
            }
            for mode in ("thread", "process"):
                with Executor(mode=mode, default_timeout_s=60) as executor:  # type: ignore[arg-type]
                    for kind, make in kinds.items():
                        rows.setdefault(kind, {})[mode] = await measure(executor, make, rounds)
            with Executor(default_timeout_s=60) as executor:
                for mode in ("thread", "process"):
                    tool = forced_http_tool(base_url, mode)
                    rows.setdefault("http, forced per tool", {})[mode] = await measure(
                        executor, batch_of([tool], calls), rounds
                    )
        finally:
            await mcp.aclose()
    print_table(rows, calls)


def print_table(rows: dict[str, dict[str, float]], calls: int) -> None:
    print(f"\n{calls} concurrent calls per batch, best of rounds; calls/s (all calls succeeded)")
    print(f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}\n")
    print(f"| {'tool kind':<26} | {'thread':>9} | {'process':>9} | {'thread/process':>14} |")
    print(f"|{'-' * 28}|{'-' * 11}|{'-' * 11}|{'-' * 16}|")
    for kind, cells in rows.items():
        ratio = cells["thread"] / cells["process"] if cells["process"] else float("nan")
        print(
            f"| {kind:<26} | {cells['thread']:>9,.0f} | {cells['process']:>9,.0f} "
            f"| {ratio:>13.2f}x |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_http(args.serve)
        return
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(run(args.calls, args.rounds))


if __name__ == "__main__":
    main()
