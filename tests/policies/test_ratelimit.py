"""The in-memory sliding-window rate limiter, on an injected clock."""

from __future__ import annotations

import asyncio

import pytest

from policies.ratelimit import MemoryRateLimiter, RateLimiter


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def limiter(clock: Clock, max_keys: int = 100_000) -> MemoryRateLimiter:
    return MemoryRateLimiter(max_keys=max_keys, clock=clock)


def test_memory_limiter_is_a_rate_limiter() -> None:
    backend: RateLimiter = MemoryRateLimiter()
    assert backend is not None


async def test_slots_are_taken_up_to_the_limit() -> None:
    clock = Clock()
    rl = limiter(clock)
    assert [await rl.acquire("k", 3, 10) for _ in range(3)] == [None, None, None]
    assert await rl.acquire("k", 3, 10) == 10.0


async def test_retry_after_is_when_the_oldest_slot_leaves_the_window() -> None:
    clock = Clock()
    rl = limiter(clock)
    assert await rl.acquire("k", 2, 10) is None  # t=1000, held until 1010
    clock.now = 1004.0
    assert await rl.acquire("k", 2, 10) is None  # held until 1014
    clock.now = 1007.5
    assert await rl.acquire("k", 2, 10) == 2.5
    clock.now = 1010.0  # the first slot leaves exactly now
    assert await rl.acquire("k", 2, 10) is None
    assert await rl.acquire("k", 2, 10) == 4.0  # the 1004 slot is next


async def test_a_refused_attempt_takes_no_slot() -> None:
    clock = Clock()
    rl = limiter(clock)
    assert await rl.acquire("k", 1, 10) is None
    for step in range(9):
        clock.now = 1000.0 + step
        assert await rl.acquire("k", 1, 10) == pytest.approx(10.0 - step)
    clock.now = 1010.0
    assert await rl.acquire("k", 1, 10) is None


async def test_retry_after_is_never_zero_or_negative() -> None:
    clock = Clock(0.1)
    rl = limiter(clock)
    assert await rl.acquire("k", 1, 0.2) is None
    clock.now = 0.1 + 0.2 - 1e-12
    wait = await rl.acquire("k", 1, 0.2)
    assert wait is not None
    assert wait > 0


async def test_keys_are_independent() -> None:
    clock = Clock()
    rl = limiter(clock)
    assert await rl.acquire("a", 1, 60) is None
    assert await rl.acquire("a", 1, 60) is not None
    assert await rl.acquire("b", 1, 60) is None
    assert await rl.acquire("b", 1, 60) is not None


async def test_the_window_slides_rather_than_resetting() -> None:
    clock = Clock(0.0)
    rl = limiter(clock)
    # 3 per 10 s, spread out: a fixed window reset at t=10 would allow 3 more at once.
    for t in (0.0, 4.0, 8.0):
        clock.now = t
        assert await rl.acquire("k", 3, 10) is None
    clock.now = 10.0
    assert await rl.acquire("k", 3, 10) is None  # the t=0 slot left
    assert await rl.acquire("k", 3, 10) == pytest.approx(4.0)  # t=4 leaves at 14
    clock.now = 14.0
    assert await rl.acquire("k", 3, 10) is None
    assert await rl.acquire("k", 3, 10) == pytest.approx(4.0)  # t=8 leaves at 18


async def test_least_recently_used_keys_are_dropped_past_max_keys() -> None:
    clock = Clock()
    rl = limiter(clock, max_keys=2)
    assert await rl.acquire("a", 1, 60) is None
    assert await rl.acquire("b", 1, 60) is None
    assert await rl.acquire("a", 1, 60) is not None  # "a" is now the most recently used
    assert await rl.acquire("c", 1, 60) is None  # drops "b"
    assert await rl.acquire("a", 1, 60) is not None  # kept
    assert await rl.acquire("b", 1, 60) is None  # forgotten: a fresh window (drops "c")
    assert await rl.acquire("a", 1, 60) is not None


async def test_concurrent_acquires_never_overshoot_the_limit() -> None:
    rl = limiter(Clock())
    results = await asyncio.gather(*(rl.acquire("k", 5, 60) for _ in range(50)))
    assert results.count(None) == 5


async def test_a_lowered_limit_waits_for_enough_slots_to_leave() -> None:
    clock = Clock(0.0)
    rl = limiter(clock)
    for t in (0.0, 1.0, 2.0):
        clock.now = t
        assert await rl.acquire("k", 3, 10) is None
    clock.now = 5.0
    # With a limit of 1, all three slots must leave first: the last at t=12.
    assert await rl.acquire("k", 1, 10) == pytest.approx(7.0)


@pytest.mark.parametrize(("limit", "window"), [(0, 10.0), (-1, 10.0), (1, 0.0), (1, -5.0)])
async def test_a_limit_below_one_or_a_window_not_positive_is_refused(
    limit: int, window: float
) -> None:
    with pytest.raises(ValueError, match=r"at least 1|positive"):
        await limiter(Clock()).acquire("k", limit, window)


def test_max_keys_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_keys"):
        MemoryRateLimiter(max_keys=0)
