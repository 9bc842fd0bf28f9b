"""bench/loop_profile.py's comparison of two trees' profiles."""

from __future__ import annotations

import cProfile
import pstats

from bench import loop_profile


def _step() -> int:
    return 1


def _profiled(steps: int) -> pstats.Stats:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        _step()
    profiler.disable()
    return pstats.Stats(profiler)


def test_the_changes_between_two_profiles_are_calls_per_request() -> None:
    before, after = _profiled(8), _profiled(4)

    lines = loop_profile._changes(before, after, requests=2, top=10)

    (line,) = [line for line in lines if line.endswith(":_step")]
    assert line.split()[:4] == ["-2.0", "4.0", "->", "2.0"]


def test_a_function_is_named_without_its_line_or_an_address() -> None:
    calls = loop_profile._per_function(_profiled(3), requests=1)

    assert any(name.endswith("test_loop_profile.py:_step") for name in calls)
    assert not any(" at 0x" in name for name in calls)
