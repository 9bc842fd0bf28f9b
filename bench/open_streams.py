"""The open streams of `bench/streams.py`: opened together, each read to its end and checked,
with the times to the first byte and the first token, the workers' RSS, and the CPU each side
used meanwhile.

The client is cheap on purpose (no JSON parsing of the chunks): it shares the cores with the
proxy it measures.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import resource
import time
from typing import Any

import aiohttp
import orjson

from bench.cpu import busy_pct, child_pids, core_jiffies, cpu_seconds, rss_mb
from bench.harness import percentile
from bench.slow_upstream import PIECE
from bench.workload import request_body


def worker_pids(pid: int) -> list[int]:
    """The processes serving requests: uvicorn's spawned workers under `pid`, else `pid`."""
    workers = []
    for child in child_pids(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if b"spawn_main" in f.read():
                    workers.append(child)
        except OSError:
            continue
    return workers or [pid]


class StreamRun:
    """Opens the streams, reads every one to its end and keeps what each took."""

    def __init__(self, url: str, chunks: int, interval: float) -> None:
        self.url, self.chunks, self.interval = url, chunks, interval
        self.body = orjson.dumps({**request_body(True), "max_tokens": chunks + 10})
        self.first = b'"content":"' + PIECE.encode()[:3]
        """The start of a content delta with text (orjson, as Toolwire renders: no spaces)."""
        self.piece = PIECE.encode()
        """The text of each model chunk: a proxy may merge deltas, so pieces are counted."""
        self.ttfb: list[float] = []
        self.ttft: list[float] = []
        self.totals: list[float] = []
        self.errors: dict[str, int] = {}
        self.samples: list[str] = []
        self.open = 0
        self.max_open = 0

    def _fail(self, kind: str, detail: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1
        if len(self.samples) < 5:
            self.samples.append(f"{kind}: {detail[:300]}")

    async def one(self, http: aiohttp.ClientSession) -> None:
        started = time.perf_counter()
        headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
        try:
            async with http.post(self.url, data=self.body, headers=headers) as resp:
                if resp.status != 200:
                    self._fail("status", f"{resp.status}: {(await resp.read())[:200]!r}")
                    return
                self.open += 1
                self.max_open = max(self.max_open, self.open)
                try:
                    await self._read(resp, started)
                finally:
                    self.open -= 1
        except (aiohttp.ClientError, TimeoutError) as exc:
            self._fail(type(exc).__name__, str(exc) or repr(exc))

    async def _read(self, resp: aiohttp.ClientResponse, started: float) -> None:
        # Cheap on purpose (no JSON parsing): 1,000 streams are 10,000 chunks a second, and
        # this client shares the cores with the proxy it measures.
        parts: list[bytes] = []
        first_byte = first_token = None
        async for data in resp.content.iter_any():
            parts.append(data)
            if first_token is None:
                first_byte = first_byte or time.perf_counter()
                if self.first in data or self.first in b"".join(parts[-2:]):
                    first_token = time.perf_counter()
        body = b"".join(parts)
        pieces = body.count(self.piece)
        done = body.rstrip().endswith(b"data: [DONE]")
        if not done or pieces != self.chunks or first_byte is None or first_token is None:
            self._fail("content", f"done={done}, {pieces} of {self.chunks} content pieces")
            return
        self.ttfb.append((first_byte - started) * 1000)
        self.ttft.append((first_token - started) * 1000)
        self.totals.append(time.perf_counter() - started)

    async def run(self, streams: int, ramp: float, pid: int, upstream: int) -> dict[str, Any]:
        connector = aiohttp.TCPConnector(limit=0)
        timeout = aiohttp.ClientTimeout(total=self.chunks * self.interval + 120)
        peaks: dict[int, float] = {}
        stop = asyncio.Event()

        async def sample() -> None:
            while not stop.is_set():
                for worker in worker_pids(pid):
                    value = rss_mb(worker)
                    if value is not None:
                        peaks[worker] = max(peaks.get(worker, 0.0), value)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.5)

        cpu_before = _cpu_snapshot(pid, upstream)
        started = time.perf_counter()
        session = aiohttp.ClientSession(connector=connector, timeout=timeout)
        async with session as http, asyncio.TaskGroup() as group:
            group.create_task(sample())
            async with asyncio.TaskGroup() as streams_group:
                for index in range(streams):
                    streams_group.create_task(self.one(http))
                    if ramp and index % 50 == 49:
                        await asyncio.sleep(ramp * 50 / streams)
            stop.set()
        seconds = time.perf_counter() - started
        cpu = _cpu_use(cpu_before, _cpu_snapshot(pid, upstream), seconds)
        # Toolwire's CPU per relayed chunk: what caps the chunks per second a worker carries.
        relayed = max(1, len(self.totals) * (self.chunks + 2))
        cpu["toolwire_us_per_chunk"] = round(cpu["toolwire"] / 100 * seconds * 1e6 / relayed, 1)
        interval_ms = self.interval * 1000
        return {
            "streams": streams,
            "ok": len(self.totals),
            "errors": sum(self.errors.values()),
            "errors_by_kind": dict(self.errors),
            "error_samples": self.samples,
            "max_open": self.max_open,
            "seconds": seconds,
            "cpu_pct": cpu,
            "ttfb_p50_ms": percentile(self.ttfb, 50),
            "ttfb_p99_ms": percentile(self.ttfb, 99),
            "ttft_p50_ms": percentile(self.ttft, 50),
            "ttft_p99_ms": percentile(self.ttft, 99),
            "added_ttft_p50_ms": percentile(self.ttft, 50) - interval_ms,
            "added_ttft_p99_ms": percentile(self.ttft, 99) - interval_ms,
            "stream_seconds_p50": percentile(self.totals, 50),
            "rss_mb": {str(k): round(v, 1) for k, v in sorted(peaks.items())},
            "max_worker_rss_mb": max(peaks.values()) if peaks else math.nan,
        }


def _cpu_snapshot(pid: int, upstream: int) -> dict[str, Any]:
    self_usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "toolwire": sum(cpu_seconds(p) or 0.0 for p in {pid, *worker_pids(pid)}),
        "upstream": cpu_seconds(upstream) or 0.0,
        "client": self_usage.ru_utime + self_usage.ru_stime,
        "cores": core_jiffies(),
    }


def _cpu_use(before: dict[str, Any], after: dict[str, Any], seconds: float) -> dict[str, float]:
    """% of one core each side used (toolwire: all its workers), and how busy the machine was
    (100 = every core; the rest of it is other programs)."""
    use = {k: 100 * (after[k] - before[k]) / seconds for k in ("toolwire", "upstream", "client")}
    use["machine_busy"] = busy_pct(before["cores"], after["cores"])
    return {k: round(v, 1) for k, v in use.items()}
