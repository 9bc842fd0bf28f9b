"""The execution log as the admin API pages it, and per-tool figures over it."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from registry import ExecutionRecord

from .models import KeyStats, KeyStatsList, LogPage, LogRecord, Stats, ToolStats

PERMISSION_OUTCOMES = frozenset({"denied", "asked", "refused"})
"""Log entries of calls the gate kept from running."""


@dataclass(frozen=True, slots=True)
class LogQuery:
    """Which records to show: every condition given must hold."""

    tool: str | None = None
    outcome: str | None = None
    """`ok`, `error` (any failure of a call that ran), or one outcome exactly."""
    request_id: str | None = None
    since: float | None = None
    until: float | None = None

    def matches(self, record: ExecutionRecord) -> bool:
        outcome = outcome_of(record)
        return (
            (self.tool is None or record.tool == self.tool)
            and (self.request_id is None or record.request_id == self.request_id)
            and (self.since is None or record.started_at >= self.since)
            and (self.until is None or record.started_at < self.until)
            and (
                self.outcome is None
                or outcome == self.outcome
                or (
                    self.outcome == "error"
                    and outcome != "ok"
                    and outcome not in PERMISSION_OUTCOMES
                )
            )
        )


def outcome_of(record: ExecutionRecord) -> str:
    """`ok`, the error kind, or the permission decision of a record."""
    return record.error or "ok"


def log_page(
    records: Sequence[ExecutionRecord], query: LogQuery, *, offset: int, limit: int
) -> LogPage:
    """The matching records, newest first, `limit` of them from `offset`."""
    matching = [r for r in reversed(records) if query.matches(r)]
    page = matching[offset : offset + limit]
    return LogPage(
        total=len(matching), offset=offset, limit=limit, records=[_wire(r) for r in page]
    )


def stats(records: Sequence[ExecutionRecord], capacity: int) -> Stats:
    """Calls, errors, refusals and latency percentiles per tool, by tool name."""
    durations: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    refused: dict[str, int] = defaultdict(int)
    for record in records:
        outcome = outcome_of(record)
        if outcome in PERMISSION_OUTCOMES:
            refused[record.tool] += 1
            continue
        durations[record.tool].append(record.duration_s * 1000)
        if outcome != "ok":
            errors[record.tool] += 1
    tools = sorted(set(durations) | set(refused))
    return Stats(
        capacity=capacity,
        tools=[
            ToolStats(
                tool=tool,
                calls=len(durations[tool]),
                errors=errors[tool],
                refused=refused[tool],
                p50_ms=percentile(durations[tool], 50),
                p95_ms=percentile(durations[tool], 95),
            )
            for tool in tools
        ],
    )


def key_stats(
    names: Sequence[str], requests: Mapping[str, int], calls: Mapping[str, tuple[int, int]]
) -> KeyStatsList:
    """Each key's requests, calls run and calls refused: the configured keys in order, then
    any other name that was counted."""
    every = list(dict.fromkeys([*names, *sorted(requests.keys() | calls.keys())]))
    return KeyStatsList(
        keys=[
            KeyStats(
                key=key,
                requests=requests.get(key, 0),
                tool_calls=calls.get(key, (0, 0))[0],
                refused=calls.get(key, (0, 0))[1],
            )
            for key in every
        ]
    )


def percentile(values: list[float], p: float) -> float | None:
    """The nearest-rank percentile of `values`, or None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return round(ordered[rank - 1], 3)


def _wire(record: ExecutionRecord) -> LogRecord:
    return LogRecord(
        tool=record.tool,
        call_id=record.call_id,
        request_id=record.request_id,
        outcome=outcome_of(record),
        arguments=record.arguments,
        result=record.result,
        duration_ms=round(record.duration_s * 1000, 3),
        started_at=record.started_at,
        attempts=record.attempts,
        mode=record.mode,
        note=record.note,
    )
