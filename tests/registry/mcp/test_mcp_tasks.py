"""MCP tools called as tasks, and every call's progress, through the real executor: the test
server `testing.mcp_tasks` over stdio and Streamable HTTP (2025-11-25 tasks), and over
Streamable HTTP in a 2026-07-28 session (the tasks extension). One source per kind for the
module; each test makes its own calls. (A server without tasks, through the
real server: tests/e2e/test_mcp_task_progress.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from registry import Executor, ToolCall, ToolProgress, ToolRegistry, reporting_to
from registry.mcp import McpSource, McpSourceConfig
from testing.mcp_tasks import TaskBoard, serve_tasks_http, stdio_tasks_command
from tests.registry.mcp.conftest import REPO

pytestmark = pytest.mark.asyncio(loop_scope="module")

TIMEOUT_S = 0.5
"""The sources' call timeout: long enough for the short calls, short for the endless ones."""


class Served:
    """A running source of the tasks server, its registry, and (over HTTP) its tasks."""

    def __init__(self, registry: ToolRegistry, board: TaskBoard | None, kind: str) -> None:
        self.registry = registry
        self.board = board
        self.modern = kind.endswith("2026")
        """A 2026-07-28 session: tasks report their status, never `notifications/progress`."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def servers() -> AsyncIterator[dict[str, Served]]:
    board = TaskBoard()
    async with serve_tasks_http(board) as url:
        served: dict[str, Served] = {}
        sources = []
        entries = {
            "stdio": ({"command": stdio_tasks_command()}, None),
            "http": ({"url": url}, board),
            "http-2026": ({"url": url, "protocol": "2026-07-28"}, board),
        }
        try:
            for name, (server, tasks) in entries.items():
                config = McpSourceConfig.model_validate({"mcp": server, "timeout_s": TIMEOUT_S})
                source = McpSource(config, base_dir=REPO)
                sources.append(source)
                registry = ToolRegistry()
                await source.start(registry)
                served[name] = Served(registry, tasks, name)
            yield served
        finally:
            for source in sources:
                await source.aclose()


@pytest.fixture(params=["stdio", "http", "http-2026"])
def served(request: pytest.FixtureRequest, servers: dict[str, Served]) -> Served:
    return servers[request.param]


async def _run(served: Served, name: str, **arguments: Any) -> tuple[str, bool, list[ToolProgress]]:
    reports: list[ToolProgress] = []
    with Executor() as executor, reporting_to(reports.append):
        tool = served.registry.get_tool(name)
        result = await executor.execute(tool, ToolCall("c1", name, arguments))
    return result.content, result.is_error, reports


async def test_a_task_tool_runs_as_a_task_and_reports_its_progress(served: Served) -> None:
    content, failed, reports = await _run(served, "crunch", steps=3, delay=0.01)
    assert (content, failed) == ("crunched 3 steps", False)
    counted = [(r.progress, r.total, r.message) for r in reports if r.progress is not None]
    if served.modern:  # a handle followed by tasks/get: its statuses only
        assert counted == [] and all(r.status is not None for r in reports)
    else:
        assert counted == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]
    assert {(r.call_id, r.tool) for r in reports} == {("c1", "crunch")}
    assert reports[-1].status == "completed"


async def test_a_plain_tool_reports_progress_under_its_own_token(served: Served) -> None:
    content, failed, reports = await _run(served, "plain", text="hi")
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
    served: Served, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    content, failed, _ = await _run(served, tool, **arguments)
    assert failed and expected in content


async def test_a_timed_out_task_is_cancelled_on_the_server(
    servers: dict[str, Served], tmp_path: Path
) -> None:
    arguments = {"steps": 10_000, "delay": 0.02, "marks": str(tmp_path)}
    content, failed, reports = await _run(servers["stdio"], "crunch", **arguments)
    assert failed and f"did not finish within {TIMEOUT_S:g} seconds" in content
    assert reports  # it ran (and reported) until the timeout
    # The cancel was answered before the call ended: the server's handler wrote its mark.
    assert (tmp_path / "cancelled").exists()


@pytest.mark.parametrize("kind", ["http", "http-2026"])
async def test_a_cancelled_caller_cancels_the_task(servers: dict[str, Served], kind: str) -> None:
    served = servers[kind]
    assert served.board is not None
    served.board.cancelled = asyncio.Event()
    running = asyncio.Event()
    with Executor() as executor, reporting_to(lambda _: running.set()):
        call = ToolCall("c1", "crunch", {"steps": 10_000, "delay": 0.02})
        tool = served.registry.get_tool("crunch")
        calling = asyncio.ensure_future(executor.execute(tool, call))
        async with asyncio.timeout(10):
            await running.wait()
        calling.cancel()
        await asyncio.wait({calling})
    assert calling.cancelled()
    async with asyncio.timeout(10):
        await served.board.cancelled.wait()
    working = [task.task_id for task in served.board.tasks.values() if task.status == "working"]
    assert working == []
