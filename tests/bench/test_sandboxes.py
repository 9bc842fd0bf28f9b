"""bench/sandboxes.py: a candidate that is not installed is skipped and said so; the one
that is measured prints its row and the table of what each sandbox allows."""

from __future__ import annotations

import pytest

from bench.sandboxes import installed, main


def test_a_missing_candidate_is_named_not_measured() -> None:
    assert installed("json") is None
    assert installed("json", "no_such_sandbox_here") == "not installed (no_such_sandbox_here)"


async def test_pydantic_monty_is_measured_and_the_properties_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    await main(["--only", "pydantic-monty", "--rounds", "1", "--calls", "3"])
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| pydantic-monty ("))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert all(float(cell.replace(",", "")) >= 0 for cell in cells[1:6]), row
    assert "| RestrictedPython | whatever the host's builtins hand in" in out
