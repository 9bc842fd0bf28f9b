"""A stdio server that cannot start says why: the missing command, or its stderr's last lines."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import aiohttp
import pytest

from registry import SourceLoadError
from registry.mcp.stderr import MAX_CHARS, MAX_LINES, ServerStderr
from testing.mcp_servers import stdio_command

REPO = Path(__file__).resolve().parents[3]
MISSING_MODULE = {"mcp": {"command": ["python", "-m", "no_such_module_xyz"]}, "namespace": "gone"}
MISSING_COMMAND = {"mcp": {"command": ["no-such-command-xyz", "--stdio"]}, "namespace": "gone"}


async def test_a_server_whose_module_is_not_installed_is_reported_with_its_stderr(start_source):
    with pytest.raises(SourceLoadError) as caught:
        await start_source(MISSING_MODULE)

    message = str(caught.value)
    assert "python -m no_such_module_xyz exited before the MCP handshake" in message
    assert "its stderr ends:" in message
    assert "No module named no_such_module_xyz" in message
    assert "Connection closed" not in message


async def test_an_optional_server_that_exits_at_once_shows_why_in_its_status(start_source):
    source = await start_source({**MISSING_MODULE, "optional": True})

    status = source.status()
    assert not status.reachable and status.tool_count == 0
    assert "No module named no_such_module_xyz" in (status.error or "")


async def test_a_command_that_does_not_exist_is_named(start_source):
    with pytest.raises(SourceLoadError, match="command not found: no-such-command-xyz"):
        await start_source(MISSING_COMMAND)

    source = await start_source({**MISSING_COMMAND, "optional": True})
    assert (source.status().error or "").startswith("command not found: no-such-command-xyz")


async def test_a_working_directory_that_does_not_exist_is_named(start_source, tmp_path: Path):
    entry = {"mcp": {"command": stdio_command("demo"), "cwd": str(tmp_path / "absent")}}

    with pytest.raises(SourceLoadError, match=r"no such working directory: .*absent"):
        await start_source(entry)


async def test_a_server_that_never_answers_times_out_with_its_stderr(start_source, tmp_path: Path):
    # A shell writes its line at once (a Python server's start could outlast the timeout on a
    # loaded machine, and its line with it); the timeout is generous beside that.
    command = ["sh", "-c", "echo 'waiting for a licence key' >&2; exec sleep 60"]
    entry = {"mcp": {"command": command, "connect_timeout_s": 5}}

    with pytest.raises(SourceLoadError) as caught:
        await start_source(entry)

    message = str(caught.value)
    assert "no answer within 5s" in message
    assert "its stderr ends: waiting for a licence key" in message


async def test_a_working_server_s_stderr_is_logged_not_passed_through(
    start_source, call_tool, tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd
):
    # The demo server logs nothing by itself: a wrapper writes a line, then runs it.
    wrapper = tmp_path / "chatty.py"
    wrapper.write_text(
        "import runpy, sys\nprint('hello from the server', file=sys.stderr, flush=True)\n"
        "sys.path.insert(0, '.')\nsys.argv = ['mcp_servers', 'demo']\n"
        "runpy.run_module('testing.mcp_servers', run_name='__main__')\n"
    )
    entry = {
        "mcp": {"command": ["python", str(wrapper)], "cwd": str(REPO)},
        "namespace": "demo",
    }
    with caplog.at_level(logging.INFO, logger="toolwire.mcp.stderr"):
        source = await start_source(entry)
        assert (await call_tool("demo.echo", text="hi")).content == "hi"

    assert source.status().error is None
    logged = [r.getMessage() for r in caplog.records if r.name == "toolwire.mcp.stderr"]
    assert "MCP server demo: hello from the server" in logged
    assert "hello from the server" not in capfd.readouterr().err


async def test_the_kept_lines_are_bounded():
    stderr = ServerStderr("test")
    lines = [f"line {i}" for i in range(100)]
    async with stderr.capture() as errlog:
        writer = errlog.buffer
        writer.write(("\n".join(lines) + "\n").encode())
        writer.write(b"x" * (3 * MAX_CHARS) + b"\nthe last words")
        writer.flush()

    assert stderr.ended
    kept = stderr.lines
    assert kept[-1] == "the last words"
    assert len(kept) == 2 and kept[-2].startswith("…xxx")
    assert sum(map(len, kept)) == MAX_CHARS  # the long line fills the room left, by its end

    short = ServerStderr("test")
    async with short.capture() as errlog:
        errlog.write("\n".join(lines) + "\n")
        errlog.flush()
    assert short.lines == lines[-MAX_LINES:]
    assert short.summary() == "its stderr ends: " + " | ".join(lines[-MAX_LINES:])


async def test_readyz_and_the_admin_name_the_missing_module(make_proxy):
    tools = [{**MISSING_MODULE, "optional": True}]
    async with make_proxy(tools=tools, admin={"enabled": True}) as proxy:
        root = proxy.base_url.removesuffix("/v1")
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{root}/readyz") as response:
                ready = await response.json()
            async with session.get(f"{root}/admin/api/sources") as response:
                sources = await response.json()

    for listing in (ready["sources"], sources):
        (status,) = listing
        assert status["name"] == "mcp:gone" and not status["reachable"]
        assert "No module named no_such_module_xyz" in status["error"]


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


async def _settled(count: int) -> int:
    """The open descriptor count once the loop has run the transports' closing callbacks."""
    for _ in range(100):
        if _open_descriptors() == count:
            break
        await asyncio.sleep(0)
    return _open_descriptors()


async def test_a_capture_leaves_no_descriptor_open_even_when_cancelled():
    before = _open_descriptors()
    finished = ServerStderr("test")
    async with finished.capture() as errlog:
        errlog.write("no newline at the end")
    assert finished.lines == ["no newline at the end"]
    assert await _settled(before) == before

    cancelled = ServerStderr("test")
    task = asyncio.current_task()
    assert task is not None
    with pytest.raises(asyncio.CancelledError):
        async with cancelled.capture() as errlog:
            task.cancel()
            await asyncio.sleep(1)
    task.uncancel()
    assert errlog.closed
    assert await _settled(before) == before
