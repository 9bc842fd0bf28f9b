"""A closed-loop load runner in this process, for benches whose requests are not one HTTP call.

`run_load(call, concurrency, warmup, duration)` runs `concurrency` workers, each awaiting
`call()` again as soon as the last one returned, for `warmup` seconds not counted and then
`duration` seconds counted: the calls that end in that window count (a call slower than
the window never does). `call` returns None when the answer was right, or a short text
saying what was wrong; an exception counts as an error too. Calls still running at the end
are cancelled.

`run_sequence(call, requests, warmup_requests, budget)` makes sequential calls (concurrency 1).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bench.harness import percentile

Call = Callable[[], Awaitable[str | None]]


@dataclass
class Outcome:
    """Latencies of the answered calls (ms), and the failures by kind with a few samples."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    samples: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def fail(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        if len(self.samples) < 5:
            self.samples.append(f"{kind}: {detail[:300]}")

    def summary(self) -> dict[str, Any]:
        ok = len(self.latencies_ms)
        return {
            "ok": ok,
            "rps": ok / self.seconds if self.seconds else math.nan,
            "p50_ms": percentile(self.latencies_ms, 50),
            "p99_ms": percentile(self.latencies_ms, 99),
            "errors": sum(self.errors.values()),
            "errors_by_kind": dict(self.errors),
            "error_samples": list(self.samples),
        }


async def _one(call: Call) -> tuple[float, str | None, str | None]:
    """(latency ms, error kind, detail) of one call; kind None when the answer was right."""
    started = time.perf_counter()
    try:
        problem = await call()
    # Whatever the call raises is that call's failure; the run goes on.
    except Exception as exc:
        return 0.0, type(exc).__name__, str(exc) or repr(exc)
    latency = (time.perf_counter() - started) * 1000
    return (latency, None, None) if problem is None else (latency, "bad answer", problem)


def _record(outcome: Outcome, result: tuple[float, str | None, str | None]) -> None:
    latency, kind, detail = result
    if kind is None:
        outcome.latencies_ms.append(latency)
    else:
        outcome.fail(kind, detail or "")


async def run_sequence(
    call: Call, requests: int, warmup_requests: int, budget: float | None = None
) -> Outcome:
    """`requests` sequential calls after `warmup_requests` uncounted ones; with a `budget`
    (seconds), each phase also stops once it is spent (a counted one after 3 calls at least),
    so a target that takes seconds per call still ends in reasonable time."""
    started = time.perf_counter()
    for _ in range(warmup_requests):
        if budget is not None and time.perf_counter() - started > budget:
            break
        await _one(call)
    outcome = Outcome()
    started = time.perf_counter()
    for index in range(requests):
        if budget is not None and index >= 3 and time.perf_counter() - started > budget:
            break
        _record(outcome, await _one(call))
    outcome.seconds = time.perf_counter() - started
    return outcome


async def run_load(call: Call, concurrency: int, warmup: float, duration: float) -> Outcome:
    """A closed loop of `concurrency` callers; the calls that end in the counted window count."""
    outcome = Outcome()
    counting = [False]

    async def worker() -> None:
        while True:
            result = await _one(call)
            if counting[0]:
                _record(outcome, result)

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(worker()) for _ in range(concurrency)]
        await asyncio.sleep(warmup)
        counting[0] = True
        started = time.perf_counter()
        await asyncio.sleep(duration)
        counting[0] = False
        outcome.seconds = time.perf_counter() - started
        for task in tasks:
            task.cancel()
    return outcome
