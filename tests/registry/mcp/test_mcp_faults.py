"""MCP faults: a server killed mid-call, deadlines, tool list changes, pagination, cleanup."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from registry import Executor, ToolCall
from testing.mcp_servers import PAGED_TOOLS, child_pids, process_state, stdio_command


async def test_server_killed_mid_call_fails_fast_then_comes_back(
    start_source, call_tool, tmp_path: Path
):
    source = await start_source({"mcp": {"command": stdio_command("demo")}, "namespace": "demo"})
    first_pid = int((await call_tool("demo.pid")).content)
    marker = tmp_path / "started"

    slow = asyncio.create_task(call_tool("demo.slow", seconds=30, started_file=str(marker)))
    async with asyncio.timeout(10):
        # Another process creates the file: there is no event to wait on, so poll it.
        while not marker.exists():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    os.kill(first_pid, signal.SIGKILL)
    async with asyncio.timeout(10):  # well short of the call's 30 s
        result = await slow

    assert result.is_error
    assert "was lost during the call" in result.content and "not retried" in result.content

    async with asyncio.timeout(15):
        await source.wait_connected()
    second_pid = int((await call_tool("demo.pid")).content)
    assert second_pid != first_pid
    assert process_state(first_pid) is None  # reaped: no zombie
    assert first_pid not in child_pids()


@pytest.mark.timeout(20)  # a missing timeout fails here, not at the suite's limit
async def test_a_call_past_its_deadline_times_out_and_the_session_survives(
    start_source, registry, call_tool
):
    # Only `slow` has the short deadline: the call after it has the default, however loaded
    # the machine.
    slow = {"slow": {"timeout_s": 0.5}}
    await start_source(
        {"mcp": {"command": stdio_command("demo")}, "namespace": "demo", "overrides": slow}
    )

    async with asyncio.timeout(10):  # well short of the call's 30 s
        result = await call_tool("demo.slow", seconds=30)

    assert result.error_kind == "timeout"
    assert (await call_tool("demo.echo", text="still here")).content == "still here"


async def test_a_tool_added_at_run_time_is_registered(start_source, registry, call_tool, wait_for):
    await start_source({"mcp": {"command": stdio_command("changing")}, "namespace": "live"})
    assert "live.extra_1" not in registry

    assert (await call_tool("live.grow")).content == "added extra_1"
    await wait_for(lambda: "live.extra_1" in registry, 10)

    assert (await call_tool("live.extra_1")).content == "extra_1 works"
    assert registry.wire_name("live.extra_1") == "live_extra_1"


async def test_every_page_of_a_long_tool_list_is_registered(start_source, registry, call_tool):
    source = await start_source({"mcp": {"command": stdio_command("paged")}, "namespace": "p"})

    assert len(registry) == PAGED_TOOLS == source.status().tool_count
    assert (await call_tool("p.tool_249")).content == "called tool_249"


async def test_aclose_leaves_no_child_process(start_source, registry):
    before = child_pids()
    source = await start_source({"mcp": {"command": stdio_command("demo")}})
    spawned = child_pids() - before
    assert spawned

    await source.aclose()

    assert not (child_pids() & spawned)
    assert all(process_state(pid) is None for pid in spawned)


async def test_an_optional_server_that_is_down_reports_unreachable(start_source):
    source = await start_source(
        {"mcp": {"url": "http://127.0.0.1:9/mcp", "connect_timeout_s": 5}, "optional": True}
    )

    status = source.status()
    assert status.name == "mcp:http://127.0.0.1:9/mcp"
    assert not status.reachable and status.tool_count == 0 and status.error


async def test_calls_while_the_server_is_away_fail_at_once(start_source, registry):
    source = await start_source({"mcp": {"command": stdio_command("demo")}, "namespace": "demo"})
    tool = registry.get_tool("demo.echo")
    await source.aclose()

    with Executor() as executor:
        result = await executor.execute(tool, ToolCall("c", "demo_echo", {"text": "x"}))

    assert result.is_error and "not connected" in result.content


async def test_a_server_that_dies_while_idle_is_noticed_and_reconnected(start_source, call_tool):
    source = await start_source({"mcp": {"command": stdio_command("demo")}, "namespace": "demo"})
    first_pid = int((await call_tool("demo.pid")).content)

    os.kill(first_pid, signal.SIGKILL)
    async with asyncio.timeout(10):
        # No call is in flight and the source has no event for a lost session: poll it.
        while source.status().reachable:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        await source.wait_connected()

    assert int((await call_tool("demo.pid")).content) != first_pid
