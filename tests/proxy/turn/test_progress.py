"""A round's calls run while their progress streams out (proxy/turn/progress.py): reports in
order under the model's tool names, every report before the end, the work's failure raised,
and a stream closed early cancels the work and waits for it."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from proxy.turn.progress import reported
from registry import ToolCall, ToolProgress
from registry.progress import current_listener


def _admitted(*calls: tuple[str, str]) -> list[Any]:
    return [SimpleNamespace(call=ToolCall(id, name, "{}")) for id, name in calls]


async def test_reports_stream_while_the_work_runs_named_as_the_model_called_them() -> None:
    step = asyncio.Event()
    seen: list[ToolProgress] = []

    async def work() -> None:
        report = current_listener()
        assert report is not None
        report(ToolProgress("c1", "ns.crunch", 1, 2))
        await step.wait()
        report(ToolProgress("c1", "ns.crunch", 2, 2))
        report(ToolProgress("c9", "other", status="completed"))  # not a call of this round

    async for progress in reported(work(), _admitted(("c1", "ns_crunch"))):
        seen.append(progress)
        step.set()  # the second report comes only once the first was taken
    assert [(p.call_id, p.tool, p.progress) for p in seen] == [
        ("c1", "ns_crunch", 1),
        ("c1", "ns_crunch", 2),
        ("c9", "other", None),
    ]
    assert current_listener() is None  # the listener is the work's alone


async def test_the_work_failure_is_raised_after_its_reports() -> None:
    async def work() -> None:
        report = current_listener()
        assert report is not None
        report(ToolProgress("c1", "t", 1))
        raise RuntimeError("the round broke")

    seen = []
    with pytest.raises(RuntimeError, match="the round broke"):
        async for progress in reported(work(), ()):
            seen.append(progress.progress)
    assert seen == [1]


async def test_closing_the_stream_early_cancels_the_work_and_waits_for_it() -> None:
    cancelled, cleaned = asyncio.Event(), asyncio.Event()

    async def work() -> None:
        report = current_listener()
        assert report is not None
        report(ToolProgress("c1", "t", 1))
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            await asyncio.sleep(0)  # cleaning up takes a turn of the loop
            cleaned.set()
            raise

    stream = reported(work(), ())
    assert (await anext(stream)).progress == 1
    await stream.aclose()
    assert cancelled.is_set() and cleaned.is_set()
