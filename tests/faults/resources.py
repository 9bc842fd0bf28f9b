"""What a process holds: file descriptors, threads, asyncio tasks, child processes."""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Holdings:
    fds: int
    threads: int
    tasks: int
    children: int

    def exceeds(self, baseline: Holdings) -> list[str]:
        """What grew past `baseline`."""
        return [
            f"{name}: {getattr(baseline, name)} -> {getattr(self, name)}"
            for name in ("fds", "threads", "tasks", "children")
            if getattr(self, name) > getattr(baseline, name)
        ]


def holdings() -> Holdings:
    return Holdings(
        fds=len(os.listdir("/proc/self/fd")),
        threads=threading.active_count(),
        tasks=len(asyncio.all_tasks()),
        children=_children(),
    )


def _children() -> int:
    count = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            count += len((task / "children").read_text().split())
        except OSError:
            continue
    return count


async def settled(baseline: Holdings, within_s: float = 10.0) -> list[str]:
    """Wait until nothing exceeds `baseline` (closing is asynchronous); what still does."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while True:
        grown = holdings().exceeds(baseline)
        if not grown or loop.time() > deadline:
            return grown
        await asyncio.sleep(0.05)
