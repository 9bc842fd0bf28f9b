"""The repetition guard's idea of "the same call", for arguments that are not plain JSON."""

from __future__ import annotations

from policies import LoopGuard, LoopLimits


def guard() -> LoopGuard:
    return LoopGuard(LoopLimits(max_identical_calls=2))


def test_different_texts_that_are_not_json_are_different_calls() -> None:
    limits = guard()
    limits.record_calls([("t.add", "{not json"), ("t.add", "also not json")])
    assert limits.tripped is None
    limits.record_calls([("t.add", "{not json")])
    assert limits.tripped == "max_identical_calls"


def test_different_unserialisable_arguments_are_different_calls() -> None:
    limits = guard()
    limits.record_calls([("t.add", {"a": {1, 2}}), ("t.add", {"a": {3}})])
    assert limits.tripped is None
    limits.record_calls([("t.add", {"a": {1, 2}})])
    assert limits.tripped == "max_identical_calls"


def test_json_spelled_differently_is_the_same_call() -> None:
    limits = guard()
    limits.record_calls([("t.add", '{"a": 1, "b": 2}'), ("t.add", {"b": 2, "a": 1})])
    assert limits.tripped == "max_identical_calls"
