"""MCP tools called as tasks, and every call's progress, through the real executor: the test
server `testing.mcp_tasks` over stdio and Streamable HTTP (2025-11-25 tasks)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from registry import Executor, ToolCall, ToolProgress, ToolRegistry, reporting_to
from testing.mcp_tasks import TaskBoard, serve_tasks_http, stdio_tasks_command
from tests.registry.mcp.conftest import StartSource


@pytest.fixture
async def board() -> TaskBoard:
    return TaskBoard()


@pytest.fixture(params=["stdio", "http"])
async def entry(request: pytest.FixtureRequest, board: TaskBoard) -> AsyncIterator[dict[str, Any]]:
    if request.param == "stdio":
        yield {"mcp": {"command": stdio_tasks_command()}, "timeout_s": 5}
        return
    async with serve_tasks_http(board) as url:
        yield {"mcp": {"url": url}, "timeout_s": 5}


async def _run(
    executor: Executor, registry: ToolRegistry, name: str, **arguments: Any
) -> tuple[str, bool, list[ToolProgress]]:
    reports: list[ToolProgress] = []
    with reporting_to(reports.append):
        result = await executor.execute(registry.get_tool(name), ToolCall("c1", name, arguments))
    return result.content, result.is_error, reports


async def test_a_task_tool_runs_as_a_task_and_reports_its_progress(
    start_source: StartSource, registry: ToolRegistry, entry: dict[str, Any]
) -> None:
    await start_source(entry)
    with Executor() as executor:
        content, failed, reports = await _run(executor, registry, "crunch", steps=3, delay=0.01)
    assert (content, failed) == ("crunched 3 steps", False)
    counted = [(r.progress, r.total, r.message) for r in reports if r.progress is not None]
    assert counted == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]
    assert {(r.call_id, r.tool) for r in reports} == {("c1", "crunch")}
    assert reports[-1].status == "completed"


async def test_a_plain_tool_reports_progress_under_its_own_token(
    start_source: StartSource, registry: ToolRegistry, entry: dict[str, Any]
) -> None:
    await start_source(entry)
    with Executor() as executor:
        content, failed, reports = await _run(executor, registry, "plain", text="hi")
    assert (content, failed) == ("plain hi", False)
    assert [(r.progress, r.status) for r in reports] == [(1, None)]


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("crunch_fails", {"reason": "no abacus"}, "the task failed: no abacus"),
        ("crunch_tool_error", {}, "the numbers did not add up"),
    ],
    ids=["failed", "tool-error"],
)
async def test_a_failing_task_is_an_error_result(
    start_source: StartSource,
    registry: ToolRegistry,
    entry: dict[str, Any],
    tool: str,
    arguments: dict[str, Any],
    expected: str,
) -> None:
    await start_source(entry)
    with Executor() as executor:
        content, failed, _ = await _run(executor, registry, tool, **arguments)
    assert failed and expected in content


async def test_a_timed_out_task_is_cancelled_on_the_server(
    start_source: StartSource, registry: ToolRegistry, tmp_path: Path
) -> None:
    await start_source({"mcp": {"command": stdio_tasks_command()}, "timeout_s": 0.5})
    with Executor() as executor:
        content, failed, reports = await _run(
            executor, registry, "crunch", steps=10_000, delay=0.02, marks=str(tmp_path)
        )
    assert failed and "did not finish within 0.5 seconds" in content
    assert reports  # it ran (and reported) until the timeout
    # The cancel was sent before the call ended: the server's handler has written its mark.
    assert (tmp_path / "cancelled").exists()


async def test_a_cancelled_caller_cancels_the_task(
    start_source: StartSource, registry: ToolRegistry, board: TaskBoard
) -> None:
    async with serve_tasks_http(board) as url:
        await start_source({"mcp": {"url": url}})
        running = asyncio.Event()
        with Executor() as executor, reporting_to(lambda _: running.set()):
            call = ToolCall("c1", "crunch", {"steps": 10_000, "delay": 0.02})
            calling = asyncio.ensure_future(executor.execute(registry.get_tool("crunch"), call))
            async with asyncio.timeout(10):
                await running.wait()
            calling.cancel()
            await asyncio.wait({calling})
        assert calling.cancelled()
        async with asyncio.timeout(10):
            await board.cancelled.wait()
        assert [task.status for task in board.tasks.values()] == ["cancelled"]


async def test_a_server_without_tasks_is_called_as_before(
    start_source: StartSource, registry: ToolRegistry
) -> None:
    await start_source({"mcp": {"command": ["python", "-m", "testing.mcp_servers", "demo"]}})
    with Executor() as executor:
        content, failed, reports = await _run(executor, registry, "echo", text="hello")
    assert (content, failed, reports) == ("hello", False, [])
