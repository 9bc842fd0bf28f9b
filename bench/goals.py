"""The goal table a bench prints: each goal's figure against its limit, PASS or MISS, the
spread over rounds, and whether the machine was quiet enough to trust the verdicts.

A goal's figure is a comparison with a reference measured in the same run (a ratio or a
difference taken within each round, then the median over rounds); the spread is the lowest and
the highest round. A goal whose figure was not measured prints `-` and says how to measure it.
A goal whose target had errors is a MISS whatever its figure.

On a shared machine the figures move with other programs' load, so the load average at the
start of the run is recorded, and above `QUIET_LOAD` the table says its verdicts are not
reliable.
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

QUIET_LOAD = 1.0
"""The 1-minute load average above which a run's verdicts are marked not reliable."""

OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "<": operator.lt,
}


@dataclass(frozen=True)
class Goal:
    """One goal: `value op limit` passes. `rounds` holds the per-round figures (the spread)."""

    key: str
    title: str
    value: float | None
    op: str
    limit: float
    unit: str = "x"
    rounds: Sequence[float | None] = ()
    errors: int = 0
    note: str = ""
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def measured(self) -> bool:
        return self.value is not None and not math.isnan(self.value)

    @property
    def verdict(self) -> str | None:
        """PASS, MISS, or None when the figure was not measured."""
        if not self.measured:
            return None
        if self.errors:
            return "MISS"
        assert self.value is not None
        return "PASS" if OPS[self.op](self.value, self.limit) else "MISS"

    @property
    def spread(self) -> tuple[float, float] | None:
        present = _present(self.rounds)
        return (min(present), max(present)) if present else None

    @property
    def rounds_passing(self) -> int:
        return sum(1 for v in _present(self.rounds) if OPS[self.op](v, self.limit))

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "value": self.value if self.measured else None,
            "op": self.op,
            "limit": self.limit,
            "unit": self.unit,
            "verdict": self.verdict,
            "rounds": [None if v is None or math.isnan(v) else v for v in self.rounds],
            "spread": list(self.spread) if self.spread else None,
            "errors": self.errors,
            "note": self.note,
            "detail": self.detail,
            **self.extra,
        }


def _present(values: Sequence[float | None]) -> list[float]:
    return [v for v in values if v is not None and not math.isnan(v)]


def load_average() -> list[float] | None:
    """The 1, 5 and 15-minute load averages; None where the system has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def reliable(load: Sequence[float] | None) -> bool:
    """Whether a run that started at this load average gives verdicts to trust."""
    return load is None or load[0] <= QUIET_LOAD


def summary(goals: Sequence[Goal], load: Sequence[float] | None) -> dict[str, Any]:
    """The goals as JSON: every goal with its verdict, and the run's noise."""
    verdicts = [g.verdict for g in goals]
    return {
        "load_average_start": list(load) if load is not None else None,
        "reliable": reliable(load),
        "passed": verdicts.count("PASS"),
        "missed": verdicts.count("MISS"),
        "not_measured": verdicts.count(None),
        "goals": [g.as_json() for g in goals],
    }


def _figure(value: float | None, unit: str) -> str:
    if value is None or math.isnan(value):
        return "-"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "ms":
        return f"{value:+.2f} ms"
    if unit == "MB":
        return f"{value:.0f} MB"
    return f"{value:,.0f}{unit and ' ' + unit}"


def _limit(goal: dict[str, Any]) -> str:
    limit, unit = goal["limit"], goal["unit"]
    if unit == "x":
        shown = f"{limit:.2f}x"
    elif unit == "ms":
        shown = f"{limit:.2f} ms"
    else:
        shown = _figure(limit, unit)
    return f"{goal['op']} {shown}"


def table(result: dict[str, Any], heading: str) -> list[str]:
    """The goal table of a `summary` (as found in a bench's JSON): one line per goal, each
    starting with its verdict; a reliability line above it when the load was high."""
    goals = result["goals"]
    width = max([len(g["title"]) for g in goals] + [4]) + 2
    lines = [heading]
    load = result.get("load_average_start")
    if not result.get("reliable", True) and load:
        lines.append(
            f"NOT RELIABLE  load average {load[0]:.2f} at the start "
            f"({load[1]:.2f} over 5 min) is above {QUIET_LOAD:g}: other programs shared "
            "the cores, so the verdicts on timed figures are not reliable (instruction counts "
            "are); rerun on a quiet machine"
        )
    last = "spread over rounds; notes" if any(g["rounds"] for g in goals) else "notes"
    lines.append(f"{'':6}{'goal':<{width}}{'measured':>10}  {'goal':<10}  {last}")
    for g in goals:
        figure = _figure(g["value"], g["unit"])
        head = f"{g['verdict'] or '-':<6}{g['title']:<{width}}{figure:>10}  {_limit(g):<10}  "
        lines.append((head + "; ".join(_notes(g))).rstrip())
    return lines


def _notes(goal: dict[str, Any]) -> list[str]:
    """What the table says beside a goal: the spread over rounds (and how many rounds pass
    when they disagree), then its detail, note and errors."""
    if goal["value"] is None:
        return [goal["note"] or "not measured in this run"]
    notes = []
    rounds = [v for v in goal["rounds"] if v is not None]
    if len(rounds) > 1:
        low, high = min(rounds), max(rounds)
        spread = f"{_figure(low, goal['unit'])} to {_figure(high, goal['unit'])}"
        passing = sum(1 for v in rounds if OPS[goal["op"]](v, goal["limit"]))
        if 0 < passing < len(rounds):
            spread += f" ({passing} of {len(rounds)} rounds pass)"
        notes.append(spread)
    elif rounds:
        notes.append("one round")
    notes += [n for n in (goal["detail"], goal["note"]) if n]
    if goal["errors"]:
        notes.append(f"{goal['errors']} errors")
    return notes
