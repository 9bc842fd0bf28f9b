"""The `llama` and `pythonic` corpora (corpus/llama.json, corpus/pythonic.json): every case
parses as expected whole and in deltas of every size from 1 to 7 characters; a cut-off or
unknown call never comes out, lenient or strict."""

from __future__ import annotations

import pytest

from tests.proxy.upstreams.emulation.corpus import exact, parse
from tests.proxy.upstreams.emulation.native_corpus import executed_wrongly, native_fixtures

CUT_OFF_LIST = {("pythonic", "truncated_in_second_call")}
"""The shared scenario expects the first call of a cut-off block; a cut-off list is one block
never run, so none comes out (the second test still checks nothing runs)."""


def _deltas(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@pytest.mark.parametrize("family", ["llama", "pythonic"])
def test_every_case_parses_whole_and_in_deltas_of_1_to_7(family: str) -> None:
    wrong = []
    for fixture in native_fixtures(family):
        if (family, fixture.tag) in CUT_OFF_LIST:
            continue
        for size in (len(fixture.text) or 1, *range(1, 8)):
            outcome = parse(fixture, _deltas(fixture.text, size))
            if not exact(outcome, fixture):
                wrong.append((fixture.tag, size, outcome.calls, outcome.content[:60]))
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("family", ["llama", "pythonic"])
def test_cut_off_and_unknown_calls_never_run(family: str) -> None:
    for fixture in native_fixtures(family):
        for strict in (False, True):
            for size in range(1, 8):
                outcome = parse(fixture, _deltas(fixture.text, size), strict=strict)
                assert executed_wrongly(fixture, outcome.calls) == 0, (fixture.tag, strict, size)


def test_llama_reads_every_version_and_pythonic_the_bare_lists() -> None:
    tags = {f.tag for f in native_fixtures("llama")}
    assert {"l3_three_calls", "vllm_simple", "l4_python_start_end", "l32_python_tag_list"} <= tags
    assert len(native_fixtures("pythonic")) >= 40
