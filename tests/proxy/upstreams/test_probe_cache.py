"""/readyz's probes: reused for a few seconds, shared by callers that ask at once."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest

from proxy.config import UpstreamConfig
from proxy.upstreams.probe import ProbeCache


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A listening socket that never accepts: each probe's connection waits in its queue."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        sock.setblocking(False)
        yield sock


def connections(listener: socket.socket) -> int:
    """How many connections were made since the last count."""
    count = 0
    while True:
        try:
            accepted, _ = listener.accept()
        except BlockingIOError:
            return count
        accepted.close()
        count += 1


async def test_a_probe_is_reused_until_it_is_ttl_old(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    now = [100.0]
    cache = ProbeCache(
        [UpstreamConfig(name="vllm", base_url=f"http://127.0.0.1:{port}/v1")],
        ttl_s=5,
        clock=lambda: now[0],
    )
    [status] = await cache.statuses()
    assert (status.name, status.address, status.reachable) == ("vllm", f"127.0.0.1:{port}", True)
    await asyncio.gather(*(cache.statuses() for _ in range(10)))
    now[0] += 4.9
    assert await cache.statuses() == [status]
    assert connections(listener) == 1
    now[0] += 0.1
    await cache.statuses()
    assert connections(listener) == 1


async def test_callers_asking_at_once_share_one_probe(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    cache = ProbeCache([UpstreamConfig(name="vllm", base_url=f"http://127.0.0.1:{port}/v1")])
    answers = await asyncio.gather(*(cache.statuses() for _ in range(10)))
    assert all(answer == answers[0] for answer in answers)
    assert connections(listener) == 1


async def test_the_demo_is_always_reachable() -> None:
    cache = ProbeCache([UpstreamConfig(name="demo", base_url="demo")])
    [status] = await cache.statuses()
    assert (status.address, status.reachable, status.error) == ("demo", True, None)
