"""The stdio transport (registry/mcp/stdio.py): the SDK's framing and life cycle, read and
written by the session's own tasks."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import anyio
import mcp_types as types
import orjson
import pytest
from mcp.client.stdio import StdioServerParameters
from mcp.shared.message import SessionMessage

from registry.mcp.stdio import _Lines, stdio_transport
from testing.waiting import until

# A server that answers each line it reads as the test scripts it: odd framing included.
SCRIPT = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        request = json.loads(line)
        rid, method = request["id"], request["method"]
        if method == "split":
            text = json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"a": 1}}).encode()
            out.write(b"not json\\n\\n" + text[:10]); out.flush(); time.sleep(0.05)
            out.write(text[10:] + b"\\n"); out.flush()
        elif method == "notify":
            note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"x": 1}}
            reply = {"jsonrpc": "2.0", "id": rid, "error": {"code": -1, "message": "no"}}
            out.write((json.dumps(note) + "\\n" + json.dumps(reply) + "\\n").encode()); out.flush()
        elif method == "stubborn":
            # A child in the server's process group, and a server that ignores its stdin's end.
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            pids = {"server": os.getpid(), "child": child.pid}
            out.write((json.dumps({"jsonrpc": "2.0", "id": rid, "result": pids}) + "\\n").encode())
            out.flush()
            import signal
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(60)
        else:
            sys.exit(0)
    """
)


def _server(tmp_path: Path) -> StdioServerParameters:
    script = tmp_path / "server.py"
    script.write_text(SCRIPT)
    return StdioServerParameters(command=sys.executable, args=[str(script)], cwd=str(tmp_path))


def _request(rid: int, method: str) -> SessionMessage:
    return SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=rid, method=method))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is gone for our purpose.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


async def test_lines_split_across_reads_and_bad_lines_surface_as_errors(tmp_path: Path) -> None:
    with (tmp_path / "stderr").open("w") as errlog:
        async with stdio_transport(_server(tmp_path), errlog) as (read, write):
            await write.send(_request(7, "split"))
            with anyio.fail_after(30):
                bad = await read.receive()
                answer = await read.receive()
    assert isinstance(bad, Exception)  # the line that is not JSON; the empty one is skipped
    assert isinstance(answer, SessionMessage)
    assert answer.message == types.JSONRPCResponse(jsonrpc="2.0", id=7, result={"a": 1})


async def test_other_messages_are_validated_as_the_sdk_does(tmp_path: Path) -> None:
    with (tmp_path / "stderr").open("w") as errlog:
        async with stdio_transport(_server(tmp_path), errlog) as (read, write):
            await write.send(_request(1, "notify"))
            with anyio.fail_after(30):
                note, error = await read.receive(), await read.receive()
    assert isinstance(note, SessionMessage) and isinstance(error, SessionMessage)
    assert isinstance(note.message, types.JSONRPCNotification)
    assert note.message.method == "notifications/message"
    assert isinstance(error.message, types.JSONRPCError)
    assert error.message.error.message == "no"


async def test_the_end_of_the_server_ends_the_read_stream(tmp_path: Path) -> None:
    with (tmp_path / "stderr").open("w") as errlog:
        async with stdio_transport(_server(tmp_path), errlog) as (read, write):
            await write.send(SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=1, method="x")))
            # The script exits on an unknown method: its stdout ends.
            with pytest.raises(anyio.EndOfStream), anyio.fail_after(30):
                await read.receive()
            items = [item async for item in read]
            assert items == []


async def test_leaving_ends_a_stubborn_server_and_its_process_group(tmp_path: Path) -> None:
    with (tmp_path / "stderr").open("w") as errlog:
        async with stdio_transport(_server(tmp_path), errlog) as (read, write):
            await write.send(_request(3, "stubborn"))
            with anyio.fail_after(30):
                answer = await read.receive()
    assert isinstance(answer, SessionMessage)
    assert isinstance(answer.message, types.JSONRPCResponse)
    pids = answer.message.result
    assert not _alive(pids["server"])
    # The child got the group's SIGTERM; it may take a moment to be reaped by init.
    await until(lambda: not _alive(pids["child"]), deadline_s=30)


async def test_a_server_that_cannot_start_raises_os_error(tmp_path: Path) -> None:
    server = StdioServerParameters(command=str(tmp_path / "missing"))
    with (tmp_path / "stderr").open("w") as errlog, pytest.raises(OSError):
        async with stdio_transport(server, errlog):
            pass


class _Pipe:
    """A read transport's flow control, as `_Lines` drives it."""

    def __init__(self) -> None:
        self.paused = False

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


def _answer_line(rid: int, result: dict[str, object]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + b"\n"


def _fed(claims: dict[int, dict[str, object]] | None = None) -> _Lines:
    lines = _Lines("utf-8", "strict")
    if claims is not None:

        def claim(rid: types.RequestId, result: dict[str, object]) -> bool:
            if rid != 1:
                return False
            claims[rid] = result
            return True

        lines.claim = claim
    return lines


def _response(rid: int, result: dict[str, object]) -> types.JSONRPCResponse:
    return types.JSONRPCResponse(jsonrpc="2.0", id=rid, result=result)


async def _last(lines: _Lines) -> object:
    """The one message the session reads from `lines`, before their end (within a deadline
    that must not fire)."""
    with anyio.fail_after(30):
        item = await lines.receive()
        with pytest.raises(anyio.EndOfStream):
            await lines.receive()
    assert isinstance(item, SessionMessage)
    return item.message


async def test_an_answer_goes_to_its_waiting_call_as_its_bytes_arrive() -> None:
    claims: dict[int, dict[str, object]] = {}
    lines = _fed(claims)
    line = _answer_line(1, {"content": []})
    lines.feed_data(line[:7])
    assert claims == {}
    lines.feed_data(line[7:])  # the line's end: handed over here, no task has run meanwhile
    assert claims == {1: {"content": []}}
    lines.feed_data(_answer_line(2, {"x": 1}))  # no call waits for it: the session reads it
    lines.feed_eof()
    assert await _last(lines) == _response(2, {"x": 1})


async def test_an_answer_behind_a_queued_message_waits_its_turn() -> None:
    claims: dict[int, dict[str, object]] = {}
    lines = _fed(claims)
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"x": 1}}
    lines.feed_data(orjson.dumps(note) + b"\n" + _answer_line(1, {"a": 1}))
    assert claims == {}
    with anyio.fail_after(30):
        first, second = await lines.receive(), await lines.receive()
    assert isinstance(first, SessionMessage) and isinstance(second, SessionMessage)
    assert isinstance(first.message, types.JSONRPCNotification)
    assert second.message == _response(1, {"a": 1})


async def test_a_session_reading_slowly_stops_the_pipe_until_it_catches_up() -> None:
    lines = _fed()
    pipe = _Pipe()
    lines.set_transport(cast(Any, pipe))
    lines.feed_data(b"".join(_answer_line(i, {}) for i in range(300)))
    assert pipe.paused
    with anyio.fail_after(30):
        for _ in range(200):
            await lines.receive()
    assert not pipe.paused


async def test_a_stream_no_protocol_feeds_is_read_by_the_session() -> None:
    class Stdout:
        def __init__(self) -> None:
            self.chunks = [_answer_line(4, {"b": 2})[:5], _answer_line(4, {"b": 2})[5:]]

        async def receive(self, max_bytes: int) -> bytes:
            if not self.chunks:
                raise anyio.EndOfStream
            return self.chunks.pop(0)

    lines = _fed()
    lines.hook(cast(Any, SimpleNamespace(stdout=Stdout())))
    assert await _last(lines) == _response(4, {"b": 2})


async def test_what_the_stream_reader_got_first_is_taken_over() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(_answer_line(5, {"c": 3}))
    reader.feed_eof()
    protocol = SimpleNamespace(stdout=reader)
    lines = _fed()
    lines.hook(cast(Any, SimpleNamespace(_process=SimpleNamespace(_protocol=protocol))))
    assert protocol.stdout is lines
    assert await _last(lines) == _response(5, {"c": 3})
