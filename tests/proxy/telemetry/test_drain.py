"""The drain: what a draining server answers, and when it tells the server to stop."""

from __future__ import annotations

import asyncio
import signal

import aiohttp
import anthropic
import openai
import pytest

from proxy import create_app, parse_settings
from proxy.telemetry import Drain, Telemetry
from testing.asgi_serving import serve_app
from testing.upstream import FakeUpstream
from tests.conftest import REPO


class Stops:
    """A `Stop` that records the signals it was called with."""

    def __init__(self) -> None:
        self.signals: list[int] = []
        self.called = asyncio.Event()

    def __call__(self, sig: int) -> None:
        self.signals.append(sig)
        self.called.set()


async def _settle() -> None:
    """Let the loop run the callbacks the signal handler scheduled."""
    for _ in range(3):
        await asyncio.sleep(0)


async def test_a_signal_with_nothing_running_stops_at_once() -> None:
    drain, stops = Drain(), Stops()
    drain.signal_handler(stops, 30)(signal.SIGTERM, None)
    await _settle()
    assert drain.draining and stops.signals == [signal.SIGTERM]


async def test_the_last_running_request_stops_the_server() -> None:
    drain, stops = Drain(), Stops()
    drain.enter()
    drain.enter()
    drain.signal_handler(stops, 30)(signal.SIGTERM, None)
    await _settle()
    assert drain.draining and stops.signals == []
    drain.leave()
    assert stops.signals == []
    drain.leave()
    assert stops.signals == [signal.SIGTERM]


async def test_the_edge_admits_reads_uncounted_and_waits_for_every_other_request() -> None:
    drain, stops = Drain(), Stops()
    assert [drain.admit(method) for method in ("GET", "HEAD", "OPTIONS")] == [False] * 3
    assert drain.admit("POST") and drain.admit("DELETE")
    drain.signal_handler(stops, 30)(signal.SIGTERM, None)
    await _settle()
    assert stops.signals == []  # the reads were never counted; two requests still run
    drain.leave()
    assert stops.signals == []
    drain.leave()
    assert stops.signals == [signal.SIGTERM]


async def test_the_drain_gives_up_after_its_limit() -> None:
    drain, stops = Drain(), Stops()
    drain.enter()
    drain.signal_handler(stops, 0)(signal.SIGTERM, None)
    async with asyncio.timeout(5):
        await stops.called.wait()
    drain.leave()  # the request ends later: the server is not stopped twice
    assert stops.signals == [signal.SIGTERM]


async def test_the_time_left_runs_from_the_signal() -> None:
    """What the server's stop may still wait for: all the time before a signal, the limit's
    rest after it, nothing once it is up."""
    drain, later = Drain(), Drain()
    assert drain.left_s() == later.left_s() == float("inf")
    drain.enter()
    drain.signal_handler(Stops(), 3600)(signal.SIGTERM, None)
    later.signal_handler(Stops(), 0)(signal.SIGTERM, None)
    await _settle()
    assert 0 < drain.left_s() <= 3600
    assert later.left_s() == 0


async def test_a_second_sigint_stops_at_once_and_a_second_sigterm_does_not() -> None:
    drain, stops = Drain(), Stops()
    drain.enter()
    handler = drain.signal_handler(stops, 30)
    handler(signal.SIGINT, None)
    handler(signal.SIGTERM, None)
    await _settle()
    assert stops.signals == []
    handler(signal.SIGINT, None)
    await _settle()
    assert stops.signals == [signal.SIGINT]


async def test_a_draining_server_answers_503_in_each_fronts_shape(upstream: FakeUpstream) -> None:
    config = {"upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}]}
    settings = parse_settings(config, base_dir=REPO, environ={})
    telemetry = Telemetry.from_settings(settings)
    telemetry.drain.begin()
    app = create_app(settings, telemetry=telemetry)
    async with serve_app(app) as root:
        chat = openai.AsyncOpenAI(base_url=f"{root}/v1", api_key="k", max_retries=0)
        async with chat:
            with pytest.raises(openai.APIStatusError) as refused:
                await chat.chat.completions.create(model="m", messages=[])
        assert refused.value.status_code == 503
        assert refused.value.code == "shutting_down"
        messages = anthropic.AsyncAnthropic(base_url=root, api_key="k", max_retries=0)
        async with messages:
            with pytest.raises(anthropic.APIStatusError) as overloaded:
                await messages.messages.create(model="m", max_tokens=8, messages=[])
        assert overloaded.value.status_code == 503
        assert overloaded.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]
        async with aiohttp.ClientSession() as session:
            for path, status in (("/readyz", 503), ("/v1/models", 503), ("/healthz", 200)):
                async with session.get(root + path) as response:
                    assert response.status == status, path
            async with session.get(f"{root}/metrics") as response:
                assert response.status == 200
                assert 'status="503"' in await response.text()
    assert upstream.requests == []
