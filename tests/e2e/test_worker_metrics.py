"""`/metrics` under `toolwire serve --workers 2`: whichever worker answers the scrape, the
counts are the sums over both workers, exact (prometheus-client's multiprocess mode)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from prometheus_client.parser import text_string_to_metric_families

from testing.upstream import FakeUpstream, Reply
from testing.waiting import until
from tests.e2e.served import toolwire_serve
from tests.e2e.test_edge_limits import head_refused

MAX_ROUNDS = 20
"""Pairs of concurrent turns sent at most until both workers have served some."""
WAIT_S = 60
"""A deadline that must not fire, however loaded the machine."""
CALLS = [("demo_nap", {"seconds": 0.3}), ("demo_pid", {})]


def _reply(body: dict[str, Any]) -> Reply:
    """Call `nap` and `pid`; once they answered, say the pid."""
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return Reply.tool_calls(CALLS)
    (pid,) = [content for content in results if content.isdigit()]
    return Reply.text(pid)


async def _turn(base: str) -> int:
    """One turn on a new connection; the id of the worker that ran it."""
    body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    connector = aiohttp.TCPConnector(force_close=True)
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.post(f"{base}/v1/chat/completions", data=body) as response,
    ):
        assert response.status == 200
        answer = await response.json()
    return int(answer["choices"][0]["message"]["content"])


async def _scrape(base: str) -> dict[tuple[str, frozenset], float]:
    connector = aiohttp.TCPConnector(force_close=True)
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(f"{base}/metrics") as response,
    ):
        assert response.status == 200
        text = await response.text()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def _counted(base: str, turns: int) -> bool:
    return _requests(await _scrape(base)) >= turns


def _sample(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def _requests(samples: dict) -> float:
    labels = {"front": "chat", "model": "other", "key": "-", "status": "200"}
    return _sample(samples, "toolwire_requests_total", **labels)


async def test_metrics_sum_both_workers(tmp_path: Path, upstream: FakeUpstream) -> None:
    """Tools run inline, so a turn's `nap` blocks its worker's loop, and the concurrent turn's
    connection is accepted by the other worker (the kernel would let one take them all)."""
    upstream.default = Reply.func(_reply)
    inline = {"mode": "inline"}
    async with toolwire_serve(tmp_path, upstream, workers=2, execution=inline) as (base, _):
        workers: list[int] = []
        while len(set(workers)) < 2:
            assert len(workers) < 2 * MAX_ROUNDS, f"one worker served all {len(workers)} turns"
            workers += await asyncio.gather(_turn(base), _turn(base))
        turns = len(workers)
        # A worker counts a request just after its last byte is sent: wait for the last one.
        await until(lambda: _counted(base, turns), deadline_s=WAIT_S, every_s=0.05)
        scrapes = [await _scrape(base) for _ in range(4)]
        assert await head_refused(base, 70_000) == 431  # each worker bounds request heads
    for samples in scrapes:
        assert _requests(samples) == turns
        calls = _sample(
            samples,
            "toolwire_tool_calls_total",
            tool="demo.pid",
            source="python:tools.py",
            outcome="ok",
        )
        assert calls == turns
        upstream_calls = _sample(
            samples, "toolwire_upstream_calls_total", upstream="fake", model="other", outcome="ok"
        )
        assert upstream_calls == 2 * turns
        assert _sample(samples, "toolwire_loop_iterations_count") == turns
        assert _sample(samples, "toolwire_loop_iterations_sum") == 2 * turns
        assert _sample(samples, "toolwire_open_streams") == 0
