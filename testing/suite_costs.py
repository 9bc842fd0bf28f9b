"""What each test costs in CPU: a pytest plugin, and the per-file table it gives.

    .venv/bin/python -m pytest -n 3 -p testing.suite_costs --suite-costs DIR
    .venv/bin/python -m testing.suite_costs DIR

Each worker writes one JSON line per test to `DIR/<worker>.jsonl`: its wall time, its own
CPU (the worker's, `time.process_time`), the CPU of the processes it started and reaped
(`RUSAGE_CHILDREN`, their own children included), and the commands it started directly
(subprocess's and multiprocessing's, through fork_exec; subprocess's rare posix_spawn
path is not counted). CPU is what the suite's time follows on a busy
machine, and a count of processes does not move with the load.
"""

from __future__ import annotations

import _posixsubprocess
import argparse
import collections
import json
import os
import resource
import subprocess
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, TextIO

import pytest


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Costs:
    """The plugin: records each test's costs to `folder`."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._out: TextIO | None = None
        self._started: list[str] = []
        self._fork_exec: Callable[..., int] = _posixsubprocess.fork_exec

    def _counting(self, *args: Any, **kwargs: Any) -> int:
        argv = args[0] or ()
        self._started.append(" ".join(os.fsdecode(a) for a in list(argv)[:4]))
        return self._fork_exec(*args, **kwargs)

    def start(self) -> None:
        # subprocess took its own reference when it was imported; multiprocessing looks it up.
        _posixsubprocess.fork_exec = self._counting
        subprocess._fork_exec = self._counting  # type: ignore[attr-defined]

    def stop(self) -> None:
        _posixsubprocess.fork_exec = self._fork_exec
        subprocess._fork_exec = self._fork_exec  # type: ignore[attr-defined]
        if self._out is not None:
            self._out.close()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None]:
        self._started = []
        wall, cpu, children = time.monotonic(), time.process_time(), _children_cpu()
        yield
        record = {
            "id": item.nodeid,
            "wall": time.monotonic() - wall,
            "cpu": time.process_time() - cpu,
            "children": _children_cpu() - children,
            "started": self._started,
        }
        if self._out is None:
            self._folder.mkdir(parents=True, exist_ok=True)
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            self._out = (self._folder / f"{worker}.jsonl").open("a", encoding="utf-8")
        self._out.write(json.dumps(record) + "\n")
        self._out.flush()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--suite-costs", metavar="DIR", help="write each test's CPU costs to DIR")


def pytest_configure(config: pytest.Config) -> None:
    folder = config.getoption("--suite-costs")
    if folder:
        costs = Costs(Path(folder))
        costs.start()
        config.pluginmanager.register(costs, "suite-costs")
        config.add_cleanup(costs.stop)


def table(folder: Path, rows: int = 30) -> str:
    """Per test file: tests, wall, own CPU, started processes' CPU and count, by total CPU."""
    files: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0])
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            row = files[record["id"].split("::")[0]]
            row[0] += 1
            row[1] += record["wall"]
            row[2] += record["cpu"]
            row[3] += record["children"]
            row[4] += len(record["started"])
    total = [sum(row[i] for row in files.values()) for i in range(5)]
    lines = [f"{'file':60} {'tests':>6} {'wall s':>8} {'cpu s':>7} {'child s':>8} {'procs':>6}"]
    ranked = sorted(files.items(), key=lambda kv: -(kv[1][2] + kv[1][3]))
    for name, row in [*ranked[:rows], ("all", total)]:
        lines.append(
            f"{name:60} {row[0]:6.0f} {row[1]:8.1f} {row[2]:7.1f} {row[3]:8.1f} {row[4]:6.0f}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--rows", type=int, default=30)
    args = parser.parse_args()
    print(table(args.folder, args.rows))


if __name__ == "__main__":
    main()
