"""Which CPU each process of a bench runs on, and how much CPU time a process used.

On a small machine the server under test and the load that drives it compete for the same
cores; pinning the server to one CPU and everything else to another keeps the measured
process from paying for its own load generator. The readings come from /proc (utime + stime,
all threads), so a bench can charge CPU to one process, its children or a whole core.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Cpus:
    """Which CPU the server under test gets and which one the rest shares."""

    server: int | None
    other: int | None

    @classmethod
    def detect(cls, enabled: bool) -> Cpus:
        """The first two allowed CPUs; none when disabled or fewer than two are allowed."""
        if not enabled or not hasattr(os, "sched_setaffinity"):
            return cls(None, None)
        try:
            allowed = sorted(os.sched_getaffinity(0))
        except OSError:
            return cls(None, None)
        if len(allowed) < 2:
            return cls(None, None)
        return cls(allowed[0], allowed[1])

    @property
    def pinned(self) -> bool:
        return self.server is not None

    def pin_self(self) -> None:
        """Put this process (the bench, its clients) on the other CPU."""
        if self.other is not None:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, {self.other})

    def describe(self) -> str:
        if not self.pinned:
            return "not pinned (no sched_setaffinity or fewer than 2 CPUs)"
        return (
            f"server under test on CPU {self.server}; upstream fake, load generator "
            f"and this script on CPU {self.other}"
        )


def pinner(cpu: int | None) -> Callable[[], None] | None:
    """A `preexec_fn` that pins a child to `cpu`; None when nothing is pinned."""
    if cpu is None:
        return None

    def pin() -> None:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {cpu})

    return pin


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name (which may hold spaces)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process (all threads); None once it is gone."""
    fields = _stat_fields(pid)
    if fields is None:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kernel_seconds(pid: int) -> float | None:
    """stime alone: the CPU a process spent in the kernel on its behalf (system calls, its
    sockets' work), which callgrind does not count; None once it is gone."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[12]) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and its children (a proxy's spawned stdio servers)."""
    return sum(cpu_seconds(p) or 0.0 for p in [pid, *child_pids(pid)])


def core_jiffies() -> dict[int, tuple[int, int]]:
    """Per CPU: (busy, total) jiffies since boot, from /proc/stat (busy excludes idle, iowait)."""
    out: dict[int, tuple[int, int]] = {}
    try:
        with open("/proc/stat") as f:
            for line in f:
                name, *values = line.split()
                if not name.startswith("cpu") or name == "cpu":
                    continue
                ticks = [int(v) for v in values[:8]]
                total = sum(ticks)
                out[int(name[3:])] = (total - ticks[3] - ticks[4], total)
    except OSError:
        pass
    return out


def busy_pct(before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]]) -> float:
    """How busy all cores were between two `core_jiffies` readings (100 = every core)."""
    busy = sum(after[c][0] - before[c][0] for c in after if c in before)
    total = sum(after[c][1] - before[c][1] for c in after if c in before)
    return 100 * busy / total if total else math.nan


def parents() -> dict[int, int]:
    """Every process's parent, from /proc."""
    found: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None:
                found[int(entry)] = int(fields[1])
    return found


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    return [child for child, parent in parents().items() if parent == pid]


def descendants(pid: int) -> list[int]:
    """Every process below `pid`: its children, theirs, and so on."""
    by_parent = parents()
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [child for child, ppid in by_parent.items() if ppid == parent]
        found += kids
        frontier += kids
    return found


def rss_mb(pid: int) -> float | None:
    """Resident set size of a process in MB (VmRSS), None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None
