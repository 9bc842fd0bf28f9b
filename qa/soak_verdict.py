"""The soak's verdict: each check passes or fails, with the figures that decided it.

Growth is judged on the floors of the counts (see `qa/soak_watch.py`), the middle third of
the run against the last third, so a warm-up that fills caches is not taken for a leak; a
floor that rises in every one of the last samples fails even within its slack.
"""

from __future__ import annotations

import itertools
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Any

from qa.soak_client import UPSTREAM_TIMEOUT_S, WEIGHTS
from qa.soak_load import Tally
from qa.soak_watch import COUNTS, SLACK, Reading, Sample

RSS_LIMIT = 0.15
RISING_SAMPLES = 5
LEAVE_LIMIT_MS = 1000.0


@dataclass
class Check:
    name: str
    ok: bool
    detail: str

    def __str__(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'} {self.name:<9} {self.detail}"


def growth_checks(samples: list[Sample], warmup: int) -> list[Check]:
    judged = samples[warmup:]
    third = len(judged) // 3
    if third == 0:
        return [Check("growth", False, f"only {len(judged)} samples after the warm-up")]
    middle, last = judged[third : 2 * third], judged[-third:]
    checks = []
    for count in COUNTS:
        before = statistics.median(s.floor[count] for s in middle)
        after = statistics.median(s.floor[count] for s in last)
        floors = [s.floor[count] for s in judged[-(RISING_SAMPLES + 1) :]]
        rising = len(floors) == RISING_SAMPLES + 1 and all(
            b > a for a, b in itertools.pairwise(floors)
        )
        grew = after - before > SLACK[count]
        detail = (
            f"floor median {before:g} (middle third) -> {after:g} (last third), "
            f"{after - before:+g} (slack +{SLACK[count]}); last floors {floors}"
        )
        if rising:
            detail += f": rose in each of the last {RISING_SAMPLES}"
        checks.append(Check(count, not grew and not rising, detail))
    before = statistics.median(s.rss_mib for s in middle)
    after = statistics.median(s.rss_mib for s in last)
    change = after / before - 1
    checks.append(
        Check(
            "rss",
            change <= RSS_LIMIT,
            f"median {before:.1f} MiB (middle third) -> {after:.1f} MiB (last third), "
            f"{change:+.1%} (limit +{RSS_LIMIT:.0%})",
        )
    )
    return checks


def request_check(tally: Tally) -> Check:
    done, failed = sum(tally.total_done.values()), sum(tally.total_failed.values())
    by_kind = ", ".join(
        f"{k} {tally.total_done[k]}"
        + (f" ({tally.total_failed[k]} failed)" * bool(tally.total_failed[k]))
        for k in WEIGHTS
    )
    return Check("requests", failed == 0, f"{done} done, {failed} failed: {by_kind}")


def drain_check(before: Reading, after: Reading, upstream: dict[str, Any]) -> Check:
    inflight = upstream.get("inflight", -1)
    ok = (
        after.tasks <= before.tasks + SLACK["tasks"]
        and after.children <= before.children
        and inflight == 0
    )
    return Check(
        "drain",
        ok,
        f"after the load: tasks {after.tasks} (before {before.tasks}, slack "
        f"+{SLACK['tasks']}), children {after.children} (before {before.children}), "
        f"fake replies in flight {inflight}; fds {after.fds} (before {before.fds}), "
        f"threads {after.threads} (before {before.threads}), rss {after.rss_mib:.1f} MiB",
    )


def leave_check(tally: Tally, upstream: dict[str, Any]) -> Check:
    held = upstream.get("leave_release_ms", [])
    sent = tally.total_done["leave"]
    if not held:
        return Check("leave", sent == 0, f"{sent} disconnects sent; the fake saw none released")
    p50, worst = statistics.median(held), max(held)
    return Check(
        "leave",
        p50 < LEAVE_LIMIT_MS,
        f"{sent} client disconnects, {upstream.get('leave_releases')} upstream calls released "
        f"after p50 {p50:.0f} ms, max {worst:.0f} ms (limit p50 < {LEAVE_LIMIT_MS:.0f} ms; "
        f"the idle timeout is {UPSTREAM_TIMEOUT_S * 1000:.0f} ms)",
    )


def log_check(log: str) -> Check:
    """Tracebacks in the server's log, counted by the exception each one ends with."""
    ends = _traceback_ends(log.splitlines())
    count = sum(ends.values())
    detail = f"{count} tracebacks in the server's log"
    if ends:
        detail += ": " + "; ".join(f"{n} x {text}" for text, n in ends.most_common(3))
    return Check("log", count == 0, detail)


def _traceback_ends(lines: list[str]) -> Counter[str]:
    """The exception line ending each traceback; a chained one counts once, by its last."""
    ends: Counter[str] = Counter()
    inside = False
    for i, line in enumerate(lines):
        if line.startswith("Traceback"):
            inside = True
        elif inside and line and not line.startswith(" "):
            inside = False
            following = " ".join(lines[i + 1 : i + 3])
            if "The above exception" not in following and "During handling" not in following:
                ends[line.strip()[:200]] += 1
    return ends
