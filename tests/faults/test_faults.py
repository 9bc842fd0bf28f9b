"""Faults from every side, asserted as a user would: a clear error in the front's shape,
nothing run twice or unapproved, nothing hung past its deadline, nothing leaked."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path
from typing import Any

import aiohttp
import openai
import orjson
import pytest

from registry import ToolRegistry
from testing.ports import free_port
from testing.upstream import FakeUpstream, Reply
from tests.conftest import ANSWER_S, serve_proxy
from tests.e2e.answers import ask, tool_messages
from tests.e2e.responses_client import respond
from tests.e2e.tools import registry_with
from tests.faults.resources import holdings, settled

USER = [{"role": "user", "content": "go"}]


def _config(fake: FakeUpstream, **sections: Any) -> dict[str, Any]:
    up = {"name": "fake", "base_url": fake.base_url, "models": ["*"]}
    up.update(sections.pop("upstream", {}))
    return {"upstreams": [up], **sections}


def crash(code: int) -> str:
    """Exit the worker process at once.

    Args:
        code: the exit status.
    """
    os._exit(code)


def crashing_registry() -> ToolRegistry:
    registry = registry_with()
    registry.register(crash, namespace="p", execution_mode="process")
    return registry


async def _raw_request(port: int, head: bytes, body: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head + body)
        await writer.drain()
        async with asyncio.timeout(10):
            return await reader.read(65536)
    finally:
        writer.close()


@pytest.mark.timeout(30)  # a missing timeout fails here, not at the suite's limit
async def test_slow_client_body_is_a_408_not_a_held_connection(upstream: FakeUpstream) -> None:
    async with serve_proxy(_config(upstream, server={"body_timeout_s": 0.3})) as proxy:
        port = int(proxy.base_url.split(":")[2].split("/")[0])
        head = (
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
            b"content-type: application/json\r\ncontent-length: 100\r\n\r\n"
        )
        # A held connection fails in _raw_request's 10 s deadline.
        answer = await _raw_request(port, head, b'{"model": "m", ')  # and then nothing
    assert answer.startswith(b"HTTP/1.1 408")
    assert b'"code":"request_timeout"' in answer
    assert upstream.requests == []


@pytest.mark.parametrize("front", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(
    ("reply", "status"),
    [(Reply.garbage(), 502), (Reply.error(503, "overloaded"), 502), (Reply.hang(), 504)],
    ids=["garbage", "5xx", "stall"],
)
async def test_upstream_faults_are_clear_errors_on_every_front(
    upstream: FakeUpstream, front: str, stream: bool, reply: Reply, status: int
) -> None:
    upstream.script(reply)
    # Only a stall waits for the timeouts. The others' are past the client's own deadline:
    # a fault not answered at once would show as the client's timeout, not as a late error.
    timeout_s = 0.5 if status == 504 else 2 * ANSWER_S
    config = _config(
        upstream, upstream={"first_byte_timeout_s": timeout_s, "idle_timeout_s": timeout_s}
    )
    async with serve_proxy(config) as proxy:
        with pytest.raises(openai.APIError) as caught:
            if front == "chat":
                await ask(proxy.client, stream=stream, messages=USER)
            else:
                await respond(proxy.client, stream=stream, model="m", input="go")
    error = caught.value
    assert not isinstance(error, openai.APITimeoutError), "the proxy never answered"
    if isinstance(error, openai.APIStatusError):
        assert error.status_code == status
        assert error.body["type"]  # type: ignore[index]
    assert "Traceback" not in str(error)


async def test_streamed_responses_failure_ends_with_response_failed(
    upstream: FakeUpstream,
) -> None:
    upstream.script(Reply.drop(after_chunks=3))
    async with serve_proxy(_config(upstream)) as proxy, aiohttp.ClientSession() as session:
        payload = {"model": "m", "input": "go", "stream": True}
        async with session.post(f"{proxy.base_url}/responses", json=payload) as response:
            assert response.status == 200
            body = await response.read()
    events = [orjson.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: ")]
    assert events[-1]["type"] == "response.failed"
    assert events[-1]["response"]["error"]["code"] == "upstream_error"
    assert [e["type"] for e in events].count("response.failed") == 1


async def test_many_concurrent_streams_all_complete(upstream: FakeUpstream) -> None:
    count = 64
    upstream.script(*[Reply.text(f"answer {i}", chunks=8) for i in range(count)])
    async with serve_proxy(_config(upstream), registry_with()) as proxy:
        outcomes = await asyncio.gather(
            *(ask(proxy.client, stream=True, messages=USER) for _ in range(count))
        )
    assert sorted(o.content for o in outcomes) == sorted(f"answer {i}" for i in range(count))
    assert all(o.finish_reason == "stop" for o in outcomes)


async def test_a_crashing_process_tool_is_an_error_and_the_next_call_runs(
    upstream: FakeUpstream,
) -> None:
    upstream.script(
        Reply.tool_calls([("p_crash", {"code": 3})]),
        Reply.text("it crashed"),
        Reply.tool_calls([("t_add", {"a": 1, "b": 2})]),
        Reply.text("3"),
    )
    async with serve_proxy(_config(upstream), crashing_registry()) as proxy:
        first = await ask(proxy.client, stream=False, messages=USER)
        second = await ask(proxy.client, stream=True, messages=USER)
    assert first.content == "it crashed" and second.content == "3"
    (crashed,) = tool_messages(upstream.requests[1])
    assert crashed["content"].startswith("Error (")
    (added,) = tool_messages(upstream.requests[3])
    assert added["content"] == "3"


async def _abandon_stream(base_url: str, ready: asyncio.Event) -> None:
    async with aiohttp.ClientSession() as session:
        payload = {"model": "m", "messages": USER, "stream": True}
        task = asyncio.ensure_future(session.post(f"{base_url}/chat/completions", json=payload))
        await ready.wait()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_faulty_workload_leaks_nothing(upstream: FakeUpstream) -> None:
    """Streams, tool rounds, errors, a disconnect and a crash; afterwards the process holds
    no more descriptors, threads, tasks or children than before."""
    async with serve_proxy(_config(upstream), crashing_registry()) as proxy:
        upstream.script(Reply.text("warm"))
        await ask(proxy.client, stream=True, messages=USER)  # lazily made pools exist
    baseline = holdings()
    started = asyncio.Event()

    def hang_after_start(body: dict[str, Any]) -> Reply:
        started.set()
        return Reply.hang()

    upstream.script(
        Reply.tool_calls([("t_get_weather", {"city": "Oslo"})]),
        Reply.text("sunny"),
        Reply.garbage(),
        Reply.tool_calls([("p_crash", {"code": 1})]),
        Reply.text("crashed"),
        Reply.func(hang_after_start),
        *[Reply.text("ok", chunks=4) for _ in range(16)],
    )
    async with serve_proxy(_config(upstream), crashing_registry()) as proxy:
        await ask(proxy.client, stream=True, messages=USER)
        with pytest.raises(openai.APIError):
            await ask(proxy.client, stream=False, messages=USER)
        await ask(proxy.client, stream=False, messages=USER)
        await _abandon_stream(proxy.base_url, started)
        assert await upstream.wait_closed(5)
        await asyncio.gather(*(ask(proxy.client, stream=True, messages=USER) for _ in range(16)))
    grown = await settled(baseline)
    assert grown == [], grown


def test_free_port_is_below_the_ephemeral_range_and_bindable() -> None:
    """Servers started in another process (redis-server, `toolwire serve`, the benches'
    fakes) get ports the kernel never hands to port-0 binds or outgoing connections."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(20):
        port = free_port()
        assert 10_000 <= port < low
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))
