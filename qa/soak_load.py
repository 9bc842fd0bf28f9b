"""The soak's load and its sampling: `--concurrency` workers send the mix of requests in a
closed loop while the server is read every second and a line is printed every interval; after
the load, the server is given time to come back to idle.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import signal
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from qa.soak_client import WEIGHTS, Client, Failure, schedule
from qa.soak_watch import COUNTS, SLACK, Interval, Reading, Sample, ServerWatch

DRAIN_S = 15.0
SAMPLES_PER_INTERVAL = 3
SAMPLES_KEPT = 5


@dataclass
class Tally:
    """Requests done and failed by kind: in the current interval and in all."""

    done: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    total_done: Counter[str] = field(default_factory=Counter)
    total_failed: Counter[str] = field(default_factory=Counter)
    new_samples: list[str] = field(default_factory=list)
    samples: dict[str, list[str]] = field(default_factory=dict)

    def record(self, kind: str, failure: str | None) -> None:
        self.done[kind] += 1
        self.total_done[kind] += 1
        if failure is None:
            return
        self.failed[kind] += 1
        self.total_failed[kind] += 1
        kept = self.samples.setdefault(kind, [])
        if len(kept) < SAMPLES_KEPT and failure not in kept:
            kept.append(failure)
        if len(self.new_samples) < SAMPLES_PER_INTERVAL:
            self.new_samples.append(f"{kind}: {failure}")

    def take(self) -> tuple[Counter[str], Counter[str], list[str]]:
        taken = (self.done, self.failed, self.new_samples)
        self.done, self.failed, self.new_samples = Counter(), Counter(), []
        return taken


async def _worker(client: Client, kinds: Iterator[str], tally: Tally, stop: asyncio.Event) -> None:
    while not stop.is_set():
        kind = next(kinds)
        try:
            await client.run(kind)
        except Failure as exc:
            tally.record(kind, str(exc))
        else:
            tally.record(kind, None)


def _line(sample: Sample, samples: list[str]) -> str:
    counts = "  ".join(f"{c} {sample.floor[c]}/{sample.peak[c]}" for c in COUNTS)
    done, failed = sum(sample.done.values()), sum(sample.failed.values())
    kinds = " ".join(f"{k} {sample.done.get(k, 0)}" for k in WEIGHTS)
    line = f"[{sample.t:5.0f}s] cpu {sample.cpu_pct:3.0f}%  rss {sample.rss_mib:6.1f} MiB  {counts}"
    line += f" | {done} done, {failed} failed | {kinds}"
    if failed:
        line += "\n         failed: " + " ".join(f"{k} {n}" for k, n in sample.failed.items())
    line += "".join(f"\n         ! {s}" for s in samples)
    return line


async def _read_until(watch: ServerWatch, interval: Interval, ends: float) -> None:
    """Read the server about every second until `ends` (a `time.monotonic()` value)."""
    while True:
        interval.add(watch.read())
        left = ends - time.monotonic()
        if left <= 0:
            return
        await asyncio.sleep(min(1.0, left))


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived while the load ran."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


async def soak(args: argparse.Namespace, base: str, watch: ServerWatch) -> dict[str, Any]:
    """Run the load for `--minutes`, sampling every `--every` seconds; then let it drain.

    Raises:
        Interrupted: on SIGINT or SIGTERM (the load is cancelled first).
    """
    loop, this = asyncio.get_running_loop(), asyncio.current_task()
    assert this is not None
    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        this.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        return await _soak(args, base, watch)
    except asyncio.CancelledError:
        if received:
            raise Interrupted(received[0]) from None
        raise
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


async def _soak(args: argparse.Namespace, base: str, watch: ServerWatch) -> dict[str, Any]:
    await asyncio.sleep(2)
    idle_before = watch.read()
    print(
        f"idle before the load: rss {idle_before.rss_mib:.1f} MiB, fds {idle_before.fds}, "
        f"threads {idle_before.threads}, tasks {idle_before.tasks}, "
        f"children {idle_before.children}",
        flush=True,
    )
    tally, stop, samples = Tally(), asyncio.Event(), []
    kinds = schedule()
    connector = aiohttp.TCPConnector(limit=args.concurrency)
    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        client = Client(session, base)
        workers = [
            asyncio.create_task(_worker(client, kinds, tally, stop))
            for _ in range(args.concurrency)
        ]
        started = time.monotonic()
        ends = started + args.minutes * 60
        try:
            for index in itertools.count(1):
                interval_ends = min(started + index * args.every, ends)
                if interval_ends - time.monotonic() < 0.5:
                    break
                interval = Interval()
                await _read_until(watch, interval, interval_ends)
                done, failed, new = tally.take()
                samples.append(interval.sample(time.monotonic() - started, done, failed))
                print(_line(samples[-1], new), flush=True)
        except asyncio.CancelledError:
            for worker in workers:
                worker.cancel()
            raise
        finally:
            stop.set()
            await asyncio.gather(*workers, return_exceptions=True)
    drained = await _drain(watch, idle_before)
    return {"idle_before": idle_before, "samples": samples, "tally": tally, "drained": drained}


async def _drain(watch: ServerWatch, before: Reading) -> Reading:
    """The server's reading once it is back to idle, or after DRAIN_S."""
    ends = time.monotonic() + DRAIN_S
    while True:
        # Two task readings later than the load's end: the stats file is written every second.
        await asyncio.sleep(1.0)
        reading = watch.read()
        settled = (
            reading.tasks <= before.tasks + SLACK["tasks"] and reading.children <= before.children
        )
        if settled or time.monotonic() > ends:
            return reading
