"""Waiting for a worker or for a busy tool: not the call's time, and never a pool thread."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from registry import Executor, Tool, ToolCall, ToolResult

DEADLINE_S = 30.0
HASTY_S = 1.0
"""The timeout of calls that must wait longer than it (3x) and still succeed: ample for a
call that runs at once, on a loaded machine too."""


@pytest.fixture
def executor() -> Iterator[Executor]:
    with Executor(default_timeout_s=DEADLINE_S, max_workers=2, process_workers=2) as ex:
        yield ex


def hold(marker: str, release: str) -> str:
    """Say it started (by creating `marker`), then run until `release` exists."""
    Path(marker).touch()
    ends = time.monotonic() + DEADLINE_S
    # The tool may run in another process, so the test's signal is a file.
    while not Path(release).exists() and time.monotonic() < ends:
        time.sleep(0.01)
    return "held"


def quick() -> str:
    return "quick"


def call(arguments: dict[str, object] | None = None, call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, name="t", arguments=arguments or {})


async def started(*markers: Path) -> None:
    async with asyncio.timeout(DEADLINE_S):
        # A worker process has no event to await here; poll its marker, bounded.
        while not all(marker.exists() for marker in markers):  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def still_waiting(*tasks: asyncio.Task[ToolResult]) -> bool:
    """Whether every task is still unfinished after three times the hasty timeout."""
    done, _ = await asyncio.wait(tasks, timeout=3 * HASTY_S)
    return not done


@pytest.mark.parametrize("mode", ["thread", "process"])
async def test_a_timeout_starts_when_the_call_gets_a_worker(
    executor: Executor, tmp_path: Path, mode: str
) -> None:
    blocker = Tool.from_function(hold, execution_mode=mode)  # type: ignore[arg-type]
    hasty = Tool.from_function(quick, execution_mode=mode, timeout_s=HASTY_S)  # type: ignore[arg-type]
    release = tmp_path / "release"
    markers = [tmp_path / f"started-{n}" for n in range(2)]
    holding = [
        asyncio.create_task(
            executor.execute(blocker, call({"marker": str(m), "release": str(release)}))
        )
        for m in markers
    ]
    await started(*markers)
    waiting = asyncio.create_task(executor.execute(hasty, call()))
    # Both workers are busy: the hasty call waits far past its own timeout...
    assert await still_waiting(waiting)
    release.touch()
    # ...and still has its whole timeout once it gets a worker.
    assert (await waiting).content == "quick"
    assert [(await task).content for task in holding] == ["held", "held"]


async def test_waiting_for_a_busy_tool_is_not_the_call_s_time(executor: Executor) -> None:
    entered, gate = asyncio.Event(), asyncio.Event()

    async def write(n: int) -> int:
        if n == 1:
            entered.set()
            await gate.wait()
        return n

    patient = Tool.from_function(write, is_concurrency_safe=False)
    hasty = patient.with_metadata(timeout_s=HASTY_S)  # the same tool: one call at a time
    first = asyncio.create_task(executor.execute(patient, call({"n": 1})))
    async with asyncio.timeout(DEADLINE_S):
        await entered.wait()
    second = asyncio.create_task(executor.execute(hasty, call({"n": 2})))
    assert await still_waiting(second)
    gate.set()
    assert (await first).content == "1"
    assert (await second).content == "2"


async def test_a_hung_unsafe_tool_holds_one_thread_and_other_tools_keep_running(
    executor: Executor, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    hung = Tool.from_function(hold, is_concurrency_safe=False, timeout_s=HASTY_S)

    def arguments(n: int) -> ToolCall:
        marker = str(tmp_path / f"started-{n}")
        return call({"marker": marker, "release": str(release)}, call_id=str(n))

    first = asyncio.create_task(executor.execute(hung, arguments(0)))
    queued = [asyncio.create_task(executor.execute(hung, arguments(n))) for n in (1, 2, 3)]
    async with asyncio.timeout(DEADLINE_S):
        timed_out = await first
    # The first call timed out; its thread runs on, and the calls behind it wait without
    # taking a thread each (the old way took one per timed-out call, until none was left).
    assert timed_out.error_kind == "timeout"
    assert await still_waiting(*queued)
    other = await executor.execute(Tool.from_function(quick, timeout_s=HASTY_S), call())
    assert other.content == "quick"
    release.touch()
    assert [(await task).content for task in queued] == ["held"] * 3
