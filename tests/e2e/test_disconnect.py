"""A client that goes away cancels the upstream request and the running tools."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import aiohttp
import orjson
import pytest

from testing.upstream import FakeUpstream, Reply
from tests.e2e.tools import Probe, registry_with

USER = [{"role": "user", "content": "work on it"}]


async def _abandon(url: str, stream: bool, ready: asyncio.Event) -> None:
    body = orjson.dumps({"model": "m", "messages": USER, "stream": stream})
    async with aiohttp.ClientSession() as session:
        request = session.post(
            f"{url}/chat/completions", data=body, headers={"content-type": "application/json"}
        )
        task = asyncio.ensure_future(request)
        await ready.wait()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_disconnect_during_tool_cancels_it(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    probe = Probe()
    upstream.script(Reply.tool_calls([("t_slow", {"task": "x"})]), Reply.text("never"))
    async with make_proxy(registry_with(probe)) as proxy:
        await _abandon(proxy.base_url, stream, probe.started)
        # The tool would run for an hour: being cancelled at all is being cancelled promptly
        # (the benchmark reports how promptly).
        async with asyncio.timeout(20):
            await probe.cancelled.wait()
    assert len(upstream.requests) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_disconnect_while_upstream_thinks_closes_upstream(
    make_proxy, upstream: FakeUpstream, stream: bool
) -> None:
    started = asyncio.Event()

    def arrived(body: dict) -> Reply:
        started.set()
        return Reply.hang()

    upstream.script(Reply.func(arrived))
    async with make_proxy(registry_with()) as proxy:
        await _abandon(proxy.base_url, stream, started)
        assert await upstream.wait_closed(5)


@pytest.mark.parametrize("path", ["chat/completions", "responses"])
async def test_a_completed_stream_is_not_logged_as_a_disconnect(
    make_proxy, upstream: FakeUpstream, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    """The client reads the whole stream and keeps its connection open a while."""
    caplog.set_level(logging.INFO, logger="toolwire")
    upstream.script(Reply.tool_calls([("t_nap", {"seconds": 0.1})]), Reply.text("rested"))
    if path == "responses":
        payload = {"model": "m", "input": "rest", "stream": True}
    else:
        payload = {"model": "m", "messages": USER, "stream": True}
    async with (
        make_proxy(registry_with()) as proxy,
        aiohttp.ClientSession() as session,
        session.post(f"{proxy.base_url}/{path}", json=payload) as response,
    ):
        body = await response.read()
        # Held open after the last byte: the server must not read that as a departure.
        closed = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(closed.wait(), 0.3)
    assert b"rested" in body
    assert not [r for r in caplog.records if "disconnected" in r.getMessage()]
