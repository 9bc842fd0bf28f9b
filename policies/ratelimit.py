"""Sliding-window rate limits: one seam, and an in-process backend bounded in keys."""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Protocol


class RateLimiter(Protocol):
    """Sliding-window counters shared by everything that limits rates (a Redis backend later)."""

    async def acquire(self, key: str, limit: int, window_s: float) -> float | None:
        """Take one slot of `key`'s window: None when taken, else the seconds until a slot frees.

        The seconds are always > 0 (for Retry-After). Raises ValueError when `limit` < 1 or
        `window_s` <= 0.
        """
        ...


class MemoryRateLimiter:
    """An in-process RateLimiter: a log of slot times per key, least recently used keys dropped.

    A slot taken at `t` is held for `[t, t + window_s)`; a refused attempt takes nothing.
    Each key should always be used with the same limit and window. Past `max_keys`, the key
    used least recently is forgotten (its window starts afresh), which bounds memory at the
    cost of leniency towards keys idle for longest.
    """

    def __init__(
        self, *, max_keys: int = 100_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_keys < 1:
            raise ValueError(f"max_keys must be at least 1, not {max_keys}")
        self._max_keys = max_keys
        self._clock = clock
        self._windows: OrderedDict[str, deque[float]] = OrderedDict()

    async def acquire(self, key: str, limit: int, window_s: float) -> float | None:
        """Take one slot of `key`'s window: None when taken, else the seconds until one frees.

        Raises ValueError when `limit` < 1 or `window_s` <= 0.
        """
        # No await in here: within one event loop, reading and taking a slot is atomic.
        if limit < 1:
            raise ValueError(f"a rate limit must allow at least 1 call, not {limit}")
        if not window_s > 0:
            raise ValueError(f"a rate window must be positive, not {window_s}")
        now = self._clock()
        log = self._window(key)
        while log and log[0] + window_s <= now:
            log.popleft()
        if len(log) < limit:
            log.append(now)
            return None
        # The oldest slot still held past the limit is the next to leave; after the pruning
        # above its expiry is strictly in the future, so the wait is never zero.
        return log[len(log) - limit] + window_s - now

    def _window(self, key: str) -> deque[float]:
        log = self._windows.get(key)
        if log is not None:
            self._windows.move_to_end(key)
            return log
        log = self._windows[key] = deque()
        if len(self._windows) > self._max_keys:
            self._windows.popitem(last=False)
        return log
