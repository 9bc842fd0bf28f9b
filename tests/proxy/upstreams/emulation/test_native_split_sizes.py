"""Every corpus (each family's, and a version's that reads differently): every case parses the
same whole and in deltas of every size from 1 to 7 (1: per character, the replay
test_native_corpus.py leaves to this test), and strict mode never runs an unknown or cut-off
call at any of those sizes."""

from __future__ import annotations

import pytest

from tests.proxy.upstreams.emulation.corpus import exact, parse
from tests.proxy.upstreams.emulation.native_corpus import (
    OWN_CORPUS,
    executed_wrongly,
    native_fixtures,
)

pytestmark = pytest.mark.usefixtures("quiet_refusals")


def _deltas(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@pytest.mark.parametrize("family", OWN_CORPUS)
def test_every_split_size_from_1_to_7_gives_the_whole_reading(family: str) -> None:
    wrong: list[tuple[object, ...]] = []
    unstable: list[tuple[object, ...]] = []
    for fixture in native_fixtures(family):
        whole = parse(fixture, [fixture.text])
        if not exact(whole, fixture):
            wrong.append((fixture.tag, whole.calls, whole.content[:80]))
        expected = (whole.content, whole.reasoning, whole.calls)
        for size in range(1, 8):
            for strict in (False, True):
                outcome = parse(fixture, _deltas(fixture.text, size), strict=strict)
                if executed_wrongly(fixture, outcome.calls):
                    unstable.append((fixture.tag, size, "ran a call it must not", strict))
                if not strict and (outcome.content, outcome.reasoning, outcome.calls) != expected:
                    unstable.append((fixture.tag, size))
    assert not wrong, wrong[:5]
    assert not unstable, unstable[:5]
