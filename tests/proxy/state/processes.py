"""Toolwire replicas as separate OS processes (`toolwire serve`, as a user runs it) on one
real redis-server, in front of the test's fake upstream, with tools that count their runs
in a file both processes append to."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from openai import AsyncOpenAI

from testing.asgi_serving import STARTUP_S
from testing.ports import free_port
from testing.upstream import FakeUpstream
from tests.conftest import REPO

FREE_KEY = "free-key-0001"
LIMITED_KEY = "limited-key-0001"
"""A key allowed 3 requests a minute, across the replicas."""

TOOLS = '''
import time
from pathlib import Path

RUNS = Path({runs!r})
HOLD = Path({hold!r})


def _ran(line: str) -> None:
    with RUNS.open("a") as runs:  # one short append: whole lines, from either process
        runs.write(line + "\\n")


def get_weather(city: str) -> dict:
    """Current weather of a city.

    Args:
        city: the city's name.
    """
    _ran(f"get_weather {{city}}")
    return {{"city": city, "sky": "sunny"}}


def book(city: str) -> str:
    """Book a trip; it takes as long as the hold file exists.

    Args:
        city: where to.
    """
    _ran(f"book {{city}}")
    deadline = time.monotonic() + 60
    while HOLD.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return f"booked {{city}}"


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first.
        b: second.
    """
    return a + b
'''


@dataclass
class Replica:
    """One `toolwire serve` process: its URL, an SDK client (the free key) and the process."""

    name: str
    base_url: str
    client: AsyncOpenAI
    process: subprocess.Popen[bytes]

    def client_with(self, key: str) -> AsyncOpenAI:
        """Another SDK client of this replica, with `key`."""
        return AsyncOpenAI(base_url=self.base_url, api_key=key, max_retries=0, timeout=30)

    def kill(self) -> None:
        """SIGKILL: no shutdown, no cleanup, as a crash or an OOM kill."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)


class Runs:
    """The tool runs both replicas recorded, one line each."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "runs.log"
        self.hold = folder / "hold"

    def lines(self) -> list[str]:
        return self.path.read_text().splitlines() if self.path.exists() else []

    async def wait_for(self, line: str, timeout: float = 60) -> None:  # noqa: ASYNC109
        """Until `line` was recorded (a deadline that must not fire, however loaded the
        machine; not a timed assertion)."""
        async with asyncio.timeout(timeout):
            while line not in self.lines():  # noqa: ASYNC110 (another process writes it)
                await asyncio.sleep(0.01)


def config(upstream: FakeUpstream, redis_url: str, prefix: str, runs: Runs) -> dict[str, Any]:
    """Both replicas' configuration: `t.get_weather` and `t.book` ask, `t.add` runs."""
    tools = runs.path.parent / "replica_tools.py"
    tools.write_text(TOOLS.format(runs=str(runs.path), hold=str(runs.hold)))
    network = {"tags": ["network"]}
    return {
        "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
        "tools": [
            {
                "python": str(tools),
                "namespace": "t",
                "overrides": {"get_weather": network, "book": network},
            }
        ],
        "policy": {"rules": [{"match": {"tags": ["network"]}, "action": "ask"}]},
        "auth": {
            "keys": [
                {"name": "free", "key": FREE_KEY},
                {"name": "limited", "key": LIMITED_KEY, "rate_limit": {"requests_per_minute": 3}},
            ]
        },
        "state": {"backend": "redis", "url": redis_url, "prefix": prefix},
        "background": {"lease_s": 1},
        "loop": {"keepalive_s": 0.1},
        "admin": {"enabled": False},
        "mcp_server": {"enabled": False},
    }


@contextlib.asynccontextmanager
async def replica_processes(
    folder: Path, upstream: FakeUpstream, redis_url: str, prefix: str, runs: Runs
) -> AsyncIterator[tuple[Replica, Replica]]:
    """Replicas A and B: two `toolwire serve` processes on one config, started together."""
    path = folder / "proxy.yaml"
    path.write_bytes(orjson.dumps(config(upstream, redis_url, prefix, runs)))  # JSON is YAML
    async with contextlib.AsyncExitStack() as stack:
        started = [
            await stack.enter_async_context(_serve(name, path, folder)) for name in ("a", "b")
        ]
        await asyncio.gather(*(_ready(replica, folder) for replica in started))
        yield started[0], started[1]


@contextlib.asynccontextmanager
async def _serve(name: str, config: Path, folder: Path) -> AsyncIterator[Replica]:
    port = free_port()
    log = folder / f"{name}.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(  # noqa: ASYNC220 (a Popen, for its pid and signals)
            [sys.executable, "-m", "proxy", "serve", "--config", str(config), "--port", str(port)],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    client = AsyncOpenAI(base_url=base_url, api_key=FREE_KEY, max_retries=0, timeout=30)
    try:
        yield Replica(name, base_url, client, process)
    finally:
        await client.close()
        if process.poll() is None:
            process.kill()
        await asyncio.to_thread(process.wait, 10)


async def _ready(replica: Replica, folder: Path) -> None:
    ready = replica.base_url.removesuffix("/v1") + "/readyz"
    headers = {"authorization": f"Bearer {FREE_KEY}"}
    async with asyncio.timeout(STARTUP_S), aiohttp.ClientSession(headers=headers) as session:
        while True:
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(ready) as response:
                    if response.status == 200:
                        return
            if replica.process.poll() is not None:
                raise RuntimeError((folder / f"{replica.name}.log").read_text())
            await asyncio.sleep(0.05)
