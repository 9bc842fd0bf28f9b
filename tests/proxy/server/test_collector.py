"""`toolwire serve`'s cyclic collector: the young generation is collected far less often than
CPython's default, so the objects of many requests in flight are not walked again and again."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from proxy.server.serving import tune_collector


@pytest.fixture
def thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*before)


@pytest.mark.usefixtures("thresholds")
def test_the_young_generation_waits_for_thousands_of_objects() -> None:
    gc.set_threshold(700, 10, 10)
    tune_collector()
    young, middle, old = gc.get_threshold()
    # 64 requests in flight hold thousands of container objects: more than the default 700.
    assert young >= 10_000
    assert (middle, old) == (10, 10)


@pytest.mark.usefixtures("thresholds")
def test_a_cycle_is_still_collected_once_the_threshold_is_crossed() -> None:
    tune_collector()
    collected: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            collected.append(info["collected"])

    class Node:
        def __init__(self) -> None:
            self.other: object = self

    gc.collect()
    gc.callbacks.append(count)
    try:
        Node()  # a cycle: only the collector frees it
        kept = [[] for _ in range(gc.get_threshold()[0] + 1)]  # crosses the threshold
        assert collected and sum(collected) >= 1
        del kept
    finally:
        gc.callbacks.remove(count)
