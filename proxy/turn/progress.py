"""A round's calls run while their progress reports stream out as `ToolProgress` events.

Only a streamed turn whose round has a call that may report progress (an MCP tool) runs
this way; every other round awaits its calls as before, at no extra cost.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Coroutine, Iterable
from dataclasses import replace
from typing import Any

from policies import Admission
from registry import ToolProgress, reporting_to, reports_progress

from .record import Turn


def shows_progress(turn: Turn, admitted: Iterable[Admission]) -> bool:
    """Whether the round's progress can reach the client: a streamed turn, a call that may
    report it."""
    return bool(turn.body.get("stream")) and any(reports_progress(a.tool) for a in admitted)


async def reported(
    work: Coroutine[Any, Any, None], admitted: Iterable[Admission]
) -> AsyncIterator[ToolProgress]:
    """Run `work` (the `admitted` calls) and yield the progress they report until it ends,
    each report naming its tool as the model called it.

    The work runs in a task of its own, which this generator owns: closing the generator
    early (the client went away) cancels the work and waits for it to end, so the calls
    are abandoned as a cancelled turn abandons them (an MCP task is cancelled).

    Raises:
        Exception: whatever `work` raised.
    """
    reports: deque[ToolProgress] = deque()
    wake = asyncio.Event()
    names = {a.call.id: a.call.name for a in admitted}

    def listener(progress: ToolProgress) -> None:
        reports.append(replace(progress, tool=names.get(progress.call_id, progress.tool)))
        wake.set()

    with reporting_to(listener):
        running = asyncio.ensure_future(work)  # its context, copied now, has the listener
    running.add_done_callback(lambda _: wake.set())
    try:
        while not running.done() or reports:
            if not reports:
                await wake.wait()
                wake.clear()
            while reports:
                yield reports.popleft()
        running.result()
    finally:
        if not running.done():
            running.cancel()
            await asyncio.wait({running})
