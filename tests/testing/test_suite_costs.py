"""The suite's cost plugin (`testing/suite_costs.py`): a test's processes are counted and
their CPU is the test's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from testing import suite_costs
from tests.conftest import REPO

SAMPLE = """
import subprocess, sys


def test_starts_two() -> None:
    for _ in range(2):
        subprocess.run([sys.executable, "-c", "sum(range(3_000_000))"], check=True)


def test_starts_none() -> None:
    assert True
"""


def test_each_test_has_its_processes_and_their_cpu(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    costs = tmp_path / "costs"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull]
    command += ["-p", "testing.suite_costs", "--suite-costs", str(costs), "test_sample.py"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (written,) = costs.glob("*.jsonl")
    records = {r["id"]: r for r in map(json.loads, written.read_text().splitlines())}
    two, none = (
        records["test_sample.py::test_starts_two"],
        records["test_sample.py::test_starts_none"],
    )
    assert [c.split()[1:] for c in two["started"]] == [["-c", "sum(range(3_000_000))"]] * 2
    assert two["children"] > 0 and two["wall"] > 0
    assert none["started"] == [] and none["children"] == 0
    table = suite_costs.table(costs).splitlines()
    assert table[1].split()[:2] == ["test_sample.py", "2"] and table[1].split()[-1] == "2"
    assert table[-1].split()[0] == "all"
