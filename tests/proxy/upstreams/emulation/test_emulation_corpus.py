"""Every corpus fixture parses as expected, whole, per character, in random chunks and at
two-chunk splits, and strict mode refuses what it should. The split points are chosen by place
(`corpus.split_points`): over a format's fixtures of one kind, every distinct boundary (three
characters each side, letters and digits by class, the format's markers and punctuation as
written) after each number of markers up to three is split once, rather than every point of
short fixtures and sampled ones of the rest, most of which repeat a boundary another fixture
already splits. The default run takes a fifth of the BFCL cases (`corpus.sample`);
`pytest --full-corpus` takes them all."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import pytest

from tests.proxy.upstreams.emulation.corpus import (
    FORMATS,
    Fixture,
    chunkings,
    exact,
    fixtures,
    parse,
    same_calls,
    sample,
    split_points,
)

pytestmark = pytest.mark.usefixtures("quiet_refusals")

KINDS = ("clean", "perturbed", "irrelevance", "truncation", "handwritten")
# The json envelope is decided at the reply's first character: prose first means plain text.
UNSUPPORTED = {("json", "lead_prose")}
Of = Callable[[str, str], list[Fixture]]


@pytest.fixture
def of(full_corpus: bool) -> Of:
    """A format's fixtures of one kind: all of them with `--full-corpus`, else the sample."""

    def select(fmt: str, kind: str) -> list[Fixture]:
        return [f for f in _fixtures(fmt, full_corpus) if f.kind == kind]

    return select


@cache
def _fixtures(fmt: str, full: bool) -> list[Fixture]:
    return fixtures(fmt) if full else sample(_fixtures(fmt, True))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_fixtures_parse_the_same_however_chunked(of: Of, fmt: str, kind: str) -> None:
    wrong, unstable = [], []
    cases = of(fmt, kind)
    assert cases
    # A perturbation that leaves the clean text as it was (407 of the sample's) is the same
    # parse as its clean fixture: the clean test replays that text per character and in
    # random chunks, and splits every place it has.
    clean = {(f.id, f.text) for f in of(fmt, "clean")} if kind == "perturbed" else set()
    places: set[tuple[int, str]] = set()
    for fixture in cases:
        text = fixture.text
        whole = parse(fixture, [text])
        if (fmt, fixture.tag) not in UNSUPPORTED and not exact(whole, fixture):
            wrong.append((fixture.id, fixture.tag, whole.calls, whole.content[:80]))
        if (fixture.id, text) in clean:
            continue
        splits = [(f"split{p}", [text[:p], text[p:]]) for p in split_points(fmt, text, places)]
        for label, chunks in [*chunkings(text, max_splits=0), *splits]:
            if kind == "truncation" and label == "chars":
                continue  # a cut-off text per character: test_truncated_calls_are_never_emitted
            got = parse(fixture, chunks)
            if (got.content, got.reasoning, got.calls) != (
                whole.content,
                whole.reasoning,
                whole.calls,
            ):
                unstable.append((fixture.id, fixture.tag, label))
                break
    assert not wrong, wrong[:5]
    assert not unstable, unstable[:5]


@pytest.mark.parametrize("fmt", FORMATS)
def test_unsupported_perturbations_are_plain_text(of: Of, fmt: str) -> None:
    for fixture in of(fmt, "perturbed"):
        if (fmt, fixture.tag) in UNSUPPORTED:
            outcome = parse(fixture, [fixture.text])
            assert outcome.calls == [] and outcome.content == fixture.text


@pytest.mark.parametrize("fmt", FORMATS)
def test_strict_mode_reads_clean_output_without_repairs(of: Of, fmt: str) -> None:
    for fixture in of(fmt, "clean"):
        outcome = parse(fixture, [fixture.text], strict=True)
        assert exact(outcome, fixture), fixture.id
        assert outcome.repairs == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_strict_mode_turns_repairs_off(of: Of, fmt: str) -> None:
    for fixture in of(fmt, "handwritten"):
        if fixture.strict_calls is not None:
            outcome = parse(fixture, [fixture.text], strict=True)
            assert same_calls(outcome.calls, fixture.strict_calls), fixture.tag
            assert outcome.repairs == [], fixture.tag
    lenient_repairs = [parse(f, [f.text]).repairs for f in of(fmt, "perturbed")]
    assert any(lenient_repairs)


@pytest.mark.parametrize("fmt", FORMATS)
def test_truncated_calls_are_never_emitted(of: Of, fmt: str) -> None:
    for fixture in of(fmt, "truncation"):
        outcome = parse(fixture, list(fixture.text))
        # Cut inside the opening marker there is no call at all; past it, the call is refused.
        assert same_calls(outcome.calls, fixture.calls), fixture.id
        # The chunked test's per-character replay of this text, which it leaves to this one.
        whole = parse(fixture, [fixture.text])
        read = (outcome.content, outcome.reasoning, outcome.calls)
        assert read == (whole.content, whole.reasoning, whole.calls), fixture.id


@pytest.mark.parametrize("fmt", FORMATS)
def test_irrelevant_prose_calls_nothing_and_keeps_its_text(of: Of, fmt: str) -> None:
    for fixture in of(fmt, "irrelevance"):
        outcome = parse(fixture, [fixture.text])
        assert outcome.calls == []
        assert outcome.content == fixture.text


def test_the_sample_keeps_every_kind_and_tag_and_every_case_in_some_format() -> None:
    cases: set[str] = set()
    for fmt in FORMATS:
        every, chosen = _fixtures(fmt, True), _fixtures(fmt, False)
        assert {(f.kind, f.tag) for f in chosen} == {(f.kind, f.tag) for f in every}, fmt
        handwritten = [f for f in every if f.kind == "handwritten"]
        assert [f for f in chosen if f.kind == "handwritten"] == handwritten, fmt
        assert len(chosen) < len(every) / 3, fmt
        cases |= {f.id for f in chosen}
    assert cases == {f.id for fmt in FORMATS for f in _fixtures(fmt, True)}
