"""What a sandbox refusal shows the model: a value of up to 80 characters whole, longer cut."""

from __future__ import annotations

import json

from policies.call_guards import SandboxGuard

SANDBOX = SandboxGuard(argument="path", deny=["x"])


def test_a_value_of_80_characters_is_shown_whole() -> None:
    value = "x" * 80
    refusal = SANDBOX.check({"path": value})
    assert refusal is not None and json.dumps(value) in refusal


def test_a_longer_value_is_cut_to_80_characters_with_a_marker() -> None:
    refusal = SANDBOX.check({"path": "x" * 81})
    assert refusal is not None
    assert json.dumps("x" * 79 + "…", ensure_ascii=False) in refusal
    assert "x" * 80 not in refusal
