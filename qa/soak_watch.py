"""What the soak reads of the server: its /proc figures and its task counts, once a second,
folded into one sample per interval.

A count's floor (its lowest reading in an interval) is what is left when the fewest requests
are in flight: the figure a leak raises, while the peak moves with the load.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.cpu import descendants

COUNTS = ("fds", "threads", "tasks", "children")
SLACK = {"fds": 8, "threads": 4, "tasks": 20, "children": 2}
"""How far a count's floor may rise and still count as steady (or, for tasks, as idle)."""


@dataclass
class Reading:
    """One look at the server process."""

    at: float
    """`time.monotonic()` when taken."""
    cpu_s: float
    """CPU time used so far (user + system, all threads)."""
    rss_mib: float
    fds: int
    threads: int
    tasks: int
    """The fewest tasks the server counted (10 times a second) since the last reading."""
    tasks_peak: int
    children: int


class ServerWatch:
    """Reads the server's /proc entries and the task counts its stats file receives."""

    def __init__(self, pid: int, tasks_file: Path) -> None:
        self.pid = pid
        self.tasks_file = tasks_file
        self._offset = 0
        self._tasks = (-1, -1)

    def read(self) -> Reading:
        """The server's figures now.

        Raises:
            RuntimeError: the server process is gone.
        """
        try:
            return self._read()
        except (FileNotFoundError, ProcessLookupError, KeyError) as exc:
            raise RuntimeError(f"the server (pid {self.pid}) is gone") from exc

    def _read(self) -> Reading:
        status = Path(f"/proc/{self.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        rss_kib = int(fields["VmRSS"].split()[0])
        # The command name may hold spaces and parentheses; the fields after its last ")" do not.
        stat = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        tasks, tasks_peak = self._latest_tasks()
        return Reading(
            at=time.monotonic(),
            cpu_s=(int(stat[11]) + int(stat[12])) / ticks,
            rss_mib=rss_kib / 1024,
            fds=len(os.listdir(f"/proc/{self.pid}/fd")),
            threads=int(fields["Threads"]),
            tasks=tasks,
            tasks_peak=tasks_peak,
            children=len(descendants(self.pid)),
        )

    def _latest_tasks(self) -> tuple[int, int]:
        """The fewest and most tasks the server counted since the last call."""
        try:
            with self.tasks_file.open("rb") as file:
                file.seek(self._offset)
                data = file.read()
        except FileNotFoundError:
            return self._tasks
        end = data.rfind(b"\n") + 1
        self._offset += end
        lines = [line.split() for line in data[:end].splitlines()]
        if lines:
            self._tasks = min(int(line[1]) for line in lines), max(int(line[2]) for line in lines)
        return self._tasks


@dataclass
class Sample:
    """One interval: RSS at its end, each count's floor and peak, the requests in it."""

    t: float
    cpu_pct: float
    """The server's CPU use over the interval; 100 = one core busy."""
    rss_mib: float
    floor: dict[str, int]
    peak: dict[str, int]
    done: dict[str, int]
    failed: dict[str, int]


class Interval:
    """Folds one-second readings into a Sample."""

    def __init__(self) -> None:
        self.readings: list[Reading] = []

    def add(self, reading: Reading) -> None:
        self.readings.append(reading)

    def sample(self, t: float, done: Counter[str], failed: Counter[str]) -> Sample:
        first, last = self.readings[0], self.readings[-1]
        busy = (last.cpu_s - first.cpu_s) / max(last.at - first.at, 1e-3)
        return Sample(
            t=round(t, 1),
            cpu_pct=round(busy * 100),
            rss_mib=round(last.rss_mib, 1),
            floor={c: min(getattr(r, c) for r in self.readings) for c in COUNTS},
            peak={
                c: max(getattr(r, "tasks_peak" if c == "tasks" else c) for r in self.readings)
                for c in COUNTS
            },
            done=dict(done),
            failed=dict(failed),
        )
