"""What spilling a long tool result costs, in memory and in Redis.

    .venv/bin/python bench/spills.py                    # table, 5 MiB result
    .venv/bin/python bench/spills.py --megabytes 1 --repeat 50

What is measured
----------------
The proxy's own part, without a model or a server: `Spills.keep` on one result of
`--megabytes` MiB (numbered lines, some with a two-byte character, as the tests' MCP
server returns: UTF-8 encoding, the store's put, the preview), then `read_result` as the
model calls it: a 16 KiB range from the middle, and a search for one line two thirds in
with a line of context either side. Each operation runs `--repeat` times; the table shows
the median and the 90th percentile in milliseconds. The Redis column uses a redis-server
started here (no persistence) on loopback; it is skipped when none is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from policies import Admission, CallContext, GateDecision, Principal
from proxy.config import ResultsConfig
from proxy.state.redis import RedisState, connect
from proxy.state.spills import MemorySpillStore, RedisSpillStore, SpillStore
from proxy.turn.spill import Spills
from proxy.turn.spill_reading import Reader
from registry import Tool, ToolCall, ToolResult
from testing.mcp_results import report_text


async def _timed(operation: Callable[[], Awaitable[Any]], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        await operation()
        times.append((time.perf_counter() - started) * 1000)
    return times


async def measure(store: SpillStore, text: str, repeat: int) -> dict[str, list[float]]:
    """Milliseconds of each operation, `repeat` times."""
    config = ResultsConfig()
    spills = Spills(config, store)
    tool = Tool.from_function(report_text, name="report")
    turn: Any = _Turn(CallContext(Principal("bench")))
    admitted = [Admission(tool, ToolCall("c1", "report", "{}"), GateDecision.RUN)]
    handles: list[str] = []

    async def keep() -> None:
        results = {"c1": ToolResult("c1", text)}
        spilled = await spills.keep(turn, admitted, results)
        handles.append(spilled["c1"].handle)

    kept = await _timed(keep, repeat)
    reader = Reader(store, "bench", read_bytes=config.read_bytes)
    middle = len(text.encode()) // 2
    row = text.count("\n") * 2 // 3
    ranged = await _timed(
        lambda: reader.read_result(handles[-1], offset=middle, length=16384), repeat
    )
    searched = await _timed(
        lambda: reader.read_result(handles[-1], pattern=f"row {row:07d}:", context_lines=1),
        repeat,
    )
    return {"keep (spill + preview)": kept, "read 16 KiB": ranged, "search": searched}


class _Turn:
    """What `Spills.keep` reads of a turn: its owner."""

    def __init__(self, caller: CallContext) -> None:
        self.caller = caller

    @property
    def owner(self) -> str:
        return self.caller.caller or ""


@contextlib.asynccontextmanager
async def redis_store() -> AsyncIterator[SpillStore | None]:
    """A Redis store on a redis-server of its own, or None where none is installed."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as folder:
        command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "no", "--dir", folder]
        process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.DEVNULL)
        try:
            url = f"redis://127.0.0.1:{port}/0"
            client = None
            for _ in range(200):
                with contextlib.suppress(Exception):
                    client = await connect(url)
                    break
                await asyncio.sleep(0.02)
            if client is None:
                raise RuntimeError("redis-server did not start")
            state = RedisState(client, prefix="bench:", max_entry_bytes=64 * 1024 * 1024)
            try:
                yield RedisSpillStore(state, ttl_s=600)
            finally:
                await state.aclose()
        finally:
            process.kill()
            await process.wait()


def _cell(times: list[float] | None) -> str:
    if not times:
        return "—"
    p90 = statistics.quantiles(times, n=10)[-1] if len(times) >= 10 else max(times)
    return f"{statistics.median(times):7.2f} / {p90:7.2f}"


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    text = report_text(int(args.megabytes * 1024))
    memory = await measure(MemorySpillStore(ttl_s=600, max_bytes=1 << 40), text, args.repeat)
    async with redis_store() as store:
        redis = await measure(store, text, args.repeat) if store is not None else {}
    size = len(text.encode())
    print(f"a result of {size} bytes, {args.repeat} runs each: median / p90 ms")
    print(f"{'operation':<24} {'memory':>17} {'redis':>17}")
    for name, times in memory.items():
        print(f"{name:<24} {_cell(times):>17} {_cell(redis.get(name)):>17}")


if __name__ == "__main__":
    asyncio.run(main())
