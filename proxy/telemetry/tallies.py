"""The per-request metrics' tallies: what a request counts goes into a plain number here (a
histogram's bucket found by bisection), with none of prometheus-client's locks and checks,
and is folded into prometheus-client's own values when scraped (or, with several workers,
`FOLD_S` after the first count since the last fold); and a labelled metric's children by
label values, found without its lock after the first time.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from typing import Any

from prometheus_client import Gauge, Histogram

FOLD_S = 1.0
"""With several workers, how long a worker's counts may wait before the files every worker's
scrape reads get them."""


class Children:
    """A labelled metric's children by label values, found without prometheus-client's
    lock and checks after the first time (label values are bounded, so is this)."""

    __slots__ = ("_cache", "_metric")

    def __init__(self, metric: Any) -> None:
        self._metric = metric
        self._cache: dict[tuple[str, ...], Any] = {}

    def __call__(self, *values: str) -> Any:
        child = self._cache.get(values)
        if child is None:
            child = self._cache[values] = self._metric.labels(*values)
        return child


class Tallies:
    """The per-request metrics' counts since they were last folded into prometheus-client's
    own: a request adds to a number (and, for a histogram, finds its bucket by bisection),
    with no lock, no checks and no loop over buckets; a fold adds each sum once.

    Alone, a process folds when it is scraped. With several workers (`toolwire serve
    --workers N`) another worker's scrape reads this one's files, so the first count after a
    fold arms a timer that folds `FOLD_S` later. Counts are only made on the event loop's
    thread (the edge and the upstream calls); tool calls, which may be counted from a
    worker thread, keep prometheus-client's locked values.
    """

    __slots__ = ("_children", "_multiprocess", "armed")

    def __init__(self, multiprocess: bool) -> None:
        self._children: list[CounterTally | HistogramTally | GaugeTally] = []
        self._multiprocess = multiprocess
        self.armed = not multiprocess
        """True while no timer needs arming: alone, or a fold is already due."""

    def add(self, child: CounterTally | HistogramTally | GaugeTally) -> None:
        self._children.append(child)

    def arm(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # outside the loop: folded at the next scrape or at the end
        self.armed = True
        loop.call_later(FOLD_S, self.fold)

    def fold(self) -> None:
        for child in self._children:
            child.fold()
        if self._multiprocess:
            self.armed = False


class CounterTally:
    """A counter's child, its increments summed until the next fold."""

    __slots__ = ("_child", "_tallies", "pending")

    def __init__(self, child: Any, tallies: Tallies) -> None:
        self._child = child
        self._tallies = tallies
        self.pending = 0.0
        tallies.add(self)

    def inc(self, amount: float = 1) -> None:
        self.pending += amount
        if not self._tallies.armed:
            self._tallies.arm()

    def fold(self) -> None:
        if self.pending:
            pending, self.pending = self.pending, 0.0
            self._child.inc(pending)


class HistogramTally:
    """A histogram's child, its observations counted per bucket until the next fold (into
    prometheus-client's own buckets and sum, as its `observe` would have put them)."""

    __slots__ = ("_child", "_tallies", "bounds", "counts", "total")

    def __init__(self, child: Any, tallies: Tallies) -> None:
        self._child = child
        self._tallies = tallies
        self.bounds: list[float] = list(child._upper_bounds)
        self.counts = [0] * len(self.bounds)
        self.total = 0.0
        tallies.add(self)

    def observe(self, amount: float) -> None:
        # The first bucket whose bound is at or above the amount (the last is +Inf).
        self.counts[bisect_left(self.bounds, amount)] += 1
        self.total += amount
        if not self._tallies.armed:
            self._tallies.arm()

    def fold(self) -> None:
        counts = self.counts
        if not any(counts):
            return
        self.counts = [0] * len(counts)
        total, self.total = self.total, 0.0
        child = self._child
        child._sum.inc(total)
        for bucket, count in zip(child._buckets, counts, strict=True):
            if count:
                bucket.inc(count)


class GaugeTally:
    """A gauge counted up and down per request (`open_streams`): a number here, set into the
    gauge at each fold, as the tallies' counts are (no lock and no checks per change)."""

    __slots__ = ("_folded", "_gauge", "_tallies", "value")

    def __init__(self, gauge: Gauge, tallies: Tallies) -> None:
        self._gauge = gauge
        self._tallies = tallies
        self._folded = 0
        self.value = 0
        tallies.add(self)

    def inc(self) -> None:
        self.value += 1
        if not self._tallies.armed:
            self._tallies.arm()

    def dec(self) -> None:
        self.value -= 1
        if not self._tallies.armed:
            self._tallies.arm()

    def fold(self) -> None:
        if self.value != self._folded:
            self._folded = self.value
            self._gauge.set(self.value)


class Tallied:
    """A labelled metric counted per request (`Tallies`): its children by label values."""

    __slots__ = ("_cache", "_kind", "_metric", "_tallies")

    def __init__(self, metric: Any, tallies: Tallies) -> None:
        self._metric = metric
        self._tallies = tallies
        self._kind = HistogramTally if isinstance(metric, Histogram) else CounterTally
        self._cache: dict[tuple[str, ...], Any] = {}

    def __call__(self, *values: str) -> Any:
        child = self._cache.get(values)
        if child is None:
            child = self._cache[values] = self._kind(self._metric.labels(*values), self._tallies)
        return child
