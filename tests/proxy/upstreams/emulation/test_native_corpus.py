"""The hand-written native-format corpus (tests/proxy/upstreams/emulation/corpus/): every case
parses as expected whole, and the same in seeded random chunks (per character, and in deltas of
every size up to 7: test_native_split_sizes.py); strict mode never runs an unknown or cut-off
call either. Quick: a few hundred cases, two replays each."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.proxy.upstreams.emulation.corpus import Fixture, exact, parse
from tests.proxy.upstreams.emulation.native_corpus import (
    BORROWED,
    NATIVE_FAMILIES,
    OWN_CORPUS,
    executed_wrongly,
    native_fixtures,
    random_chunks,
)

pytestmark = pytest.mark.usefixtures("quiet_refusals")


def _folded(fixture: Fixture, chunks: list[str], *, strict: bool = False) -> tuple[object, ...]:
    outcome = parse(fixture, chunks, strict=strict)
    return outcome.content, outcome.reasoning, outcome.calls


@pytest.mark.parametrize("family", OWN_CORPUS)
def test_every_case_parses_as_expected_however_chunked(family: str) -> None:
    cases = native_fixtures(family)
    assert len(cases) >= 40
    wrong, unstable = [], []
    for fixture in cases:
        whole = parse(fixture, [fixture.text])
        if not exact(whole, fixture):
            wrong.append((fixture.tag, whole.calls, whole.content[:80]))
        expected = (whole.content, whole.reasoning, whole.calls)
        for seed in range(2):
            pieces = random_chunks(fixture.text, f"{fixture.id}:{seed}")
            if _folded(fixture, pieces) != expected:
                unstable.append((fixture.tag, f"random{seed}"))
    assert not wrong, wrong[:5]
    assert not unstable, unstable[:5]


@pytest.mark.parametrize("version", BORROWED)
def test_a_version_reads_its_familys_corpus_as_the_family_does(version: str) -> None:
    wrong = []
    for fixture in native_fixtures(version):
        whole = parse(fixture, [fixture.text])
        if not exact(whole, fixture):
            wrong.append((fixture.tag, whole.calls, whole.content[:80]))
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("family", NATIVE_FAMILIES)
def test_unknown_and_cut_off_calls_never_come_out(family: str) -> None:
    for fixture in native_fixtures(family):
        for strict in (False, True):
            outcome = parse(fixture, random_chunks(fixture.text, fixture.id), strict=strict)
            assert executed_wrongly(fixture, outcome.calls) == 0, (fixture.tag, strict)


@pytest.mark.parametrize("family", NATIVE_FAMILIES)
def test_the_corpus_covers_what_the_issue_asks(family: str) -> None:
    tags = {f.tag for f in native_fixtures(family)}
    for needed in (
        "parallel_two",
        "nested_object",
        "unicode_cjk",
        "own_markers_in_string",
        "reasoning_then_call",
        "malformed_call",
        "truncated_in_arguments",
        "plain_answer",
        "unknown_tool",
    ):
        assert needed in tags


def test_the_bench_reports_each_family_against_the_goals(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = Path(__file__).resolve().parents[4] / "bench" / "emulation.py"
    spec = importlib.util.spec_from_file_location("bench_emulation", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, bench)  # its dataclasses look themselves up
    spec.loader.exec_module(bench)
    bench.main(["--corpus", "native", "--formats", "deepseek-v3.2,kimi,json"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0] for row in rows[1:]] == ["| deepseek-v3.2", "| kimi"]
    assert all(row.endswith("| PASS |") for row in rows[1:])
