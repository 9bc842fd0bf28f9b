"""What running a Responses API request in the background costs against running it in the
request, on one process, with the state in memory and in Redis.

    .venv/bin/python bench/background.py                 # 200 requests of each kind
    .venv/bin/python bench/background.py --requests 500

Per kind, sequential requests through the official SDK to the real server (uvicorn on
loopback) in front of the test suite's fake upstream (a 20-word answer, streamed):

* foreground stream: `stream: true`, until `response.completed`;
* background stream: `background: true, stream: true`, until `response.completed` (the
  events go through the run store's log and back, the way a resumed stream reads them);
* background create: `background: true`, until the `queued` answer (what a poller waits).

It prints the p50 and p95 of each, per backend. The redis-server is started here (no
persistence), as in the state tests; without it only memory is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testing.upstream import FakeUpstream, Reply
from tests.conftest import serve_proxy
from tests.proxy.state.conftest import _REDIS, RedisServer

ANSWER = " ".join(f"word{i}" for i in range(20))


async def _streamed(client: Any, **request: Any) -> None:
    stream = await client.responses.create(model="fake-model", input="hi", stream=True, **request)
    kinds = [event.type async for event in stream]
    if kinds[-1:] != ["response.completed"]:
        raise RuntimeError(f"the stream ended with {kinds[-1:]}, not response.completed")


async def _measure(config: dict[str, Any], requests: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {
        "foreground stream": [],
        "background stream": [],
        "background create": [],
    }
    async with serve_proxy(config) as proxy:
        client = proxy.client
        for _ in range(20):  # warm-up
            await _streamed(client)
            await _streamed(client, background=True)
        for _ in range(requests):
            start = time.perf_counter()
            await _streamed(client)
            timings["foreground stream"].append(time.perf_counter() - start)
            start = time.perf_counter()
            await _streamed(client, background=True)
            timings["background stream"].append(time.perf_counter() - start)
            start = time.perf_counter()
            created = await client.responses.create(model="fake-model", input="hi", background=True)
            timings["background create"].append(time.perf_counter() - start)
            assert created.status == "queued"
        await asyncio.sleep(0.2)  # the last runs end before the server stops
    return timings


def _report(backend: str, timings: dict[str, list[float]]) -> None:
    for kind, values in timings.items():
        values.sort()
        p50 = statistics.median(values) * 1000
        p95 = values[int(len(values) * 0.95) - 1] * 1000
        print(f"{backend:7} {kind:18} p50 {p50:6.2f} ms   p95 {p95:6.2f} ms")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    async with FakeUpstream(Reply.text(ANSWER)) as upstream:
        base = {
            "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
            "background": {"max_runs": 1000},
        }
        _report("memory", await _measure(base, args.requests))
        if _REDIS is None:
            print("redis-server is not installed: Redis not measured")
            return
        with tempfile.TemporaryDirectory(prefix="toolwire-redis-") as folder:
            redis = RedisServer(folder)
            redis.start()
            try:
                state = {"backend": "redis", "url": redis.url, "prefix": f"b-{uuid.uuid4()}:"}
                _report("redis", await _measure({**base, "state": state}, args.requests))
            finally:
                redis.stop()


if __name__ == "__main__":
    asyncio.run(main())
