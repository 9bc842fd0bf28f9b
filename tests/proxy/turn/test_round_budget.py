"""A tool round within the turn's remaining budget (`tool_round._within`): its calls' results, or a
timeout for each when the budget runs out; the caller's own cancellation stays its own."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import pytest

from proxy.turn import tool_round
from registry import TaskTimer, ToolResult


def _admitted(*ids: str) -> list[Any]:
    return [SimpleNamespace(call=SimpleNamespace(id=i), result=None) for i in ids]


async def test_a_round_done_in_time_gives_its_results() -> None:
    async def work() -> list[ToolResult]:
        return [ToolResult(call_id="a", content="ok")]

    results = await tool_round._within(work(), TaskTimer.current(), cast(Any, _admitted("a")), 30)

    assert [r.content for r in results] == ["ok"]


async def test_a_round_past_the_budget_is_a_timeout_for_each_call() -> None:
    results = await tool_round._within(
        asyncio.Event().wait(), TaskTimer.current(), cast(Any, _admitted("a", "b")), 0.05
    )

    assert [(r.call_id, r.error_kind) for r in results] == [("a", "timeout"), ("b", "timeout")]
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_the_callers_cancellation_is_not_the_budgets() -> None:
    async def within() -> list[ToolResult]:
        timer = TaskTimer.current()
        return await tool_round._within(
            asyncio.Event().wait(), timer, cast(Any, _admitted("a")), 30
        )

    waiting = asyncio.create_task(within())
    await asyncio.sleep(0)
    waiting.cancel()

    with pytest.raises(asyncio.CancelledError):
        await waiting
