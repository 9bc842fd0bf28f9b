"""Smoke tests of the mutation tool: which mutants it finds, and its command line."""

from __future__ import annotations

import pytest

from qa import mutation
from qa.mutants import mutants_of, spread

SOURCE = b"""import logging

log = logging.getLogger(__name__)


def allowed(user, limit):
    log.info("checking %s", user)
    if user.count >= limit and not user.admin:  # a comment
        return False
    user.count += 1
    return True


def quiet(x):
    return x == 1  # pragma: no mutate
"""


def test_the_mutants_of_a_module() -> None:
    found = {(m.line, m.description) for m in mutants_of("m.py", SOURCE)}
    assert (8, "condition negated") in found
    assert (8, "`>=` → `>`") in found
    assert (8, "`and` → `or`") in found
    assert (8, "`not` dropped") in found
    assert (9, "return True") in found
    assert (10, "augmented assignment removed") in found
    assert (11, "return False") in found
    assert not [line for line, _ in found if line in (7, 15)], "a log call, a pragma"


def test_every_mutant_changes_the_source_and_compiles() -> None:
    for mutant in mutants_of("m.py", SOURCE):
        changed = mutant.apply(SOURCE)
        assert changed != SOURCE
        compile(changed, "m.py", "exec")


def test_a_limit_spreads_the_mutants_over_the_module() -> None:
    mutants = mutants_of("m.py", SOURCE)
    picked = spread(mutants, 3)
    assert len(picked) == 3
    assert picked[0] is mutants[0] and picked[-1] is not mutants[-1]
    assert spread(mutants, None) == mutants


def test_list_prints_the_mutants_of_a_module(capsys: pytest.CaptureFixture[str]) -> None:
    assert mutation.main(["--list", "--module", "registry/addresses.py", "--limit", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5
    assert all(line.startswith("registry/addresses.py:") for line in lines)
