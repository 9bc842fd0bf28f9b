"""SIGTERM to `toolwire serve` while a streamed turn runs an MCP stdio tool (a real child
process): the turn completes, new requests get 503 meanwhile, the process exits 0, and no
process it started is left. With one process and with `--workers 2`."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import openai
import orjson
import pytest

from testing.mcp_servers import process_state, stdio_command
from testing.upstream import FakeUpstream, Reply
from testing.waiting import until
from tests.conftest import REPO
from tests.e2e.served import descendants, log_lines, toolwire_serve

USER = [{"role": "user", "content": "hi"}]
WAIT_S = 60
"""A deadline that must not fire, however loaded the machine."""
MCP_STDIO = {"mcp": {"command": stdio_command("demo"), "cwd": str(REPO)}, "namespace": "mcp"}


@contextlib.asynccontextmanager
async def _streamed_turn(
    session: aiohttp.ClientSession, base: str
) -> AsyncIterator[aiohttp.ClientResponse]:
    """A streamed turn, once its tools run."""
    body = orjson.dumps({"model": "m", "messages": USER, "stream": True})
    async with session.post(f"{base}/v1/chat/completions", data=body) as response:
        assert response.status == 200
        await response.content.readuntil(b"tools running")
        yield response


async def _refused(base: str) -> int:
    """The status a new turn gets, through the OpenAI SDK."""
    client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0, timeout=WAIT_S)
    async with client:
        with pytest.raises(openai.APIStatusError) as refused:
            await client.chat.completions.create(model="m", messages=USER)
    assert "shutting down" in refused.value.message
    return refused.value.status_code


async def _until_draining(tmp_path: Path, processes: int) -> None:
    """Until as many processes as given have logged that they drain."""

    def draining() -> bool:
        lines = [line for line in log_lines(tmp_path) if line["logger"] == "toolwire.drain"]
        return len(lines) >= processes

    await until(draining, deadline_s=WAIT_S, every_s=0.05)


async def _until_exists(path: Path) -> None:
    await until(path.exists, deadline_s=WAIT_S)


def _alive(pids: set[int]) -> dict[int, str]:
    """The processes among `pids` still there (zombies too), with their command lines."""
    alive = {}
    for pid in pids:
        if process_state(pid) is not None:
            with contextlib.suppress(OSError):
                alive[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return alive


def _text(stream: bytes) -> str:
    events = [e for e in stream.split(b"\n\n") if e.startswith(b"data: {")]
    deltas = (orjson.loads(e[6:])["choices"][0]["delta"] for e in events)
    return "".join(delta.get("content") or "" for delta in deltas)


@pytest.mark.parametrize(
    ("workers", "mode"),
    [(1, "thread"), (1, "process"), (2, "thread")],
    ids=["one-process", "process-pool", "two-workers"],
)
async def test_sigterm_drains_a_turn_running_an_mcp_stdio_tool(
    tmp_path: Path, upstream: FakeUpstream, workers: int, mode: str
) -> None:
    """The Python tool runs in a thread, or in a process of the execution pool (one more
    child that must not outlive the server)."""
    release = tmp_path / "release"
    upstream.script(
        Reply.tool_calls(
            [("mcp_slow", {"seconds": 0.2}), ("demo_wait_for", {"path": str(release)})]
        ),
        Reply.text("all done"),
    )
    execution = {"mode": mode}
    served = toolwire_serve(
        tmp_path, upstream, tools=[MCP_STDIO], workers=workers, execution=execution
    )
    async with served as (base, process), aiohttp.ClientSession() as session:
        async with _streamed_turn(session, base) as turn:
            await _until_exists(tmp_path / "release.started")
            started = descendants(process.pid)
            # An MCP server per worker, the workers (with more than one), a pool process.
            expected = workers + (workers if workers > 1 else 0) + (mode == "process")
            assert len(started) >= expected
            process.send_signal(signal.SIGTERM)
            await _until_draining(tmp_path, workers)
            assert await _refused(base) == 503
            async with session.get(f"{base}/readyz") as ready:
                assert ready.status == 503
                assert (await ready.json())["status"] == "draining"
            async with session.get(f"{base}/healthz") as live:
                assert live.status == 200
            assert process.poll() is None
            release.touch()
            rest = await turn.read()
        assert await asyncio.to_thread(process.wait, WAIT_S) == 0
    assert _text(rest) == "all done"
    assert rest.endswith(b"data: [DONE]\n\n")
    assert _alive(started) == {}
    assert len(upstream.requests) == 2  # the refused turn never went upstream


@pytest.mark.parametrize("workers", [1, 2], ids=["one-process", "two-workers"])
async def test_a_connection_taken_as_the_server_stops_is_answered(
    tmp_path: Path, upstream: FakeUpstream, workers: int
) -> None:
    """A connection the server took before SIGTERM, whose request comes only once no process
    listens any more (with nothing to drain, the server stops at once), gets the drain's 503
    with `Connection: close`, not a reset; and the server then exits 0."""
    # The request comes within its head's deadline, however loaded the machine.
    served = toolwire_serve(
        tmp_path, upstream, workers=workers, server={"header_timeout_s": WAIT_S}
    )
    async with served as (base, process):
        port = int(base.rpartition(":")[2])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        own = writer.get_extra_info("sockname")[1]
        await until(lambda: _accepted(port, own), deadline_s=WAIT_S)
        process.send_signal(signal.SIGTERM)
        await until(lambda: not _listening(port), deadline_s=WAIT_S)
        body = orjson.dumps({"model": "m", "messages": USER})
        head = f"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
        head += f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        writer.write(head.encode() + body)
        answer = await asyncio.wait_for(reader.read(), WAIT_S)  # until the server closes
        writer.close()
        assert await asyncio.to_thread(process.wait, WAIT_S) == 0
    status, _, rest = answer.partition(b"\r\n")
    fields, _, error = rest.partition(b"\r\n\r\n")
    assert status == b"HTTP/1.1 503 Service Unavailable"
    assert b"connection: close" in fields.lower().split(b"\r\n")
    assert orjson.loads(error)["error"]["code"] == "shutting_down"
    assert upstream.requests == []


async def test_a_silent_connection_holds_the_stop_until_its_head_deadline(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    """A connection taken before SIGTERM that never sends a request is closed at its head's
    deadline (`server.header_timeout_s`), as it would be while serving, and the server exits."""
    served = toolwire_serve(tmp_path, upstream, server={"header_timeout_s": 0.5})
    async with served as (base, process):
        port = int(base.rpartition(":")[2])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        own = writer.get_extra_info("sockname")[1]
        await until(lambda: _accepted(port, own), deadline_s=WAIT_S)
        process.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(process.wait, WAIT_S) == 0
        assert await asyncio.wait_for(reader.read(), WAIT_S) == b""
        writer.close()


def _sockets(port: int) -> list[list[str]]:
    """The loopback TCP sockets of `port`, as `/proc/net/tcp` lists them: each one's fields
    (its local and remote address, its state, ..., its inode: 0 while it waits to be
    accepted)."""
    local = f":{port:04X}"
    lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return [fields for line in lines if (fields := line.split())[1].endswith(local)]


def _accepted(port: int, client_port: int) -> bool:
    """Whether a process serving `port` has accepted the connection from `client_port`."""
    remote = f":{client_port:04X}"
    return any(fields[2].endswith(remote) and fields[9] != "0" for fields in _sockets(port))


def _listening(port: int) -> bool:
    return any(fields[3] == "0A" for fields in _sockets(port))


async def test_the_drain_gives_up_after_drain_s(tmp_path: Path, upstream: FakeUpstream) -> None:
    """A turn still running when `server.drain_s` is up is cancelled, and its tools with it."""
    release = tmp_path / "release"  # never created
    upstream.script(Reply.tool_calls([("mcp_slow", {"seconds": 60})]))
    served = toolwire_serve(tmp_path, upstream, tools=[MCP_STDIO], server={"drain_s": 0.5})
    async with served as (base, process), aiohttp.ClientSession() as session:
        async with _streamed_turn(session, base) as turn:
            started = descendants(process.pid)
            process.send_signal(signal.SIGTERM)
            with contextlib.suppress(aiohttp.ClientPayloadError):
                await turn.read()
        assert await asyncio.to_thread(process.wait, WAIT_S) == 0
    assert not release.exists()
    assert _alive(started) == {}
    drain = [line["message"] for line in log_lines(tmp_path) if line["logger"] == "toolwire.drain"]
    assert any("cancelling 1 running request" in message for message in drain)
