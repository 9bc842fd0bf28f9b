"""Emulated tool-call parsing, per format, over the corpora in tests/proxy/upstreams/emulation.

    .venv/bin/python bench/emulation.py [--splits N] [--formats mistral,llama]
                                        [--corpus all|bfcl|native|speed]

The native corpus (hand-written outputs per family, in its corpus/ folder) is reported per
family against the goals: >= 99 % exact unstreamed and streamed (random chunks through the
adapter), no false calls on plain answers, no truncated or unknown call executed, streamed
equal to unstreamed; each row says PASS or MISS. Then each family's parse time over its
corpus: per reply whole and fed in 4-character deltas (about one token each), and the ratio
to `hermes` measured in the same run, the default format and the cheapest reader.

Prints exact-match accuracy on clean and perturbed fixtures, detection precision, recall and
F1 (relevance fixtures should call, irrelevance ones should not), the false-call rate on
irrelevance, split invariance and stream == non-stream through the adapter (both must be
100 %), and the safety counters (truncated or unknown calls emitted, exceptions: all 0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proxy.upstreams.emulation import NumberedIds, ToolSpecs, get_format, run, translate

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: the corpora are under tests/
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from tests.proxy.upstreams.emulation.corpus import (
    FORMATS,
    Fixture,
    Outcome,
    chunkings,
    exact,
    fixtures,
    parse,
    same_calls,
)
from tests.proxy.upstreams.emulation.native_corpus import (
    NATIVE_FAMILIES,
    executed_wrongly,
    native_fixtures,
    random_chunks,
)

GOAL_EXACT = 99.0


@dataclass
class Tally:
    """Counts for one format."""

    clean: list[bool]
    perturbed: list[bool]
    tp: int = 0
    fp: int = 0
    fn: int = 0
    irrelevant: int = 0
    split_ok: int = 0
    stream_ok: int = 0
    total: int = 0
    truncated_emitted: int = 0
    unknown_emitted: int = 0
    exceptions: int = 0


async def _adapter(fixture: Fixture, pieces: list[str]) -> tuple[str, list[tuple[str, Any]]]:
    """The fixture through `translate`, as streamed chunks of `pieces` (one piece: unstreamed)."""
    outcome = await _adapter_outcome(fixture, pieces)
    return outcome.content, outcome.calls


async def _adapter_outcome(fixture: Fixture, pieces: list[str]) -> Outcome:
    """The fixture through `translate`: content, reasoning and calls as a client gets them."""
    finish = "length" if fixture.truncated else "stop"

    async def chunks() -> AsyncIterator[dict[str, Any]]:
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            choice = {
                "index": 0,
                "delta": {"content": piece},
                "finish_reason": finish if last else None,
            }
            yield {"id": "b", "choices": [choice]}

    fmt = get_format(fixture.format)
    parser = fmt.parser(ToolSpecs.from_tools(fixture.tools), strict=False)
    content, reasoning, calls = "", "", []
    async for chunk in translate(chunks(), parser, NumberedIds(fmt.call_ids)):
        for choice in chunk["choices"]:
            content += choice["delta"].get("content") or ""
            reasoning += choice["delta"].get("reasoning_content") or ""
            for call in choice["delta"].get("tool_calls") or []:
                calls.append((call["function"]["name"], json.loads(call["function"]["arguments"])))
    return Outcome(content, calls, reasoning)


def _measure(fixture: Fixture, tally: Tally, splits: int) -> None:
    whole = parse(fixture, [fixture.text])
    names = {t["function"]["name"] for t in fixture.tools}
    tally.total += 1
    tally.unknown_emitted += sum(1 for name, _ in whole.calls if name not in names)
    if fixture.kind == "truncation" and not same_calls(whole.calls, fixture.calls):
        tally.truncated_emitted += 1
    if fixture.kind == "clean":
        tally.clean.append(exact(whole, fixture))
    if fixture.kind == "perturbed":
        tally.perturbed.append(exact(whole, fixture))
    if fixture.kind in ("clean", "perturbed"):
        tally.tp += bool(whole.calls)
        tally.fn += not whole.calls
    if fixture.kind == "irrelevance":
        tally.irrelevant += 1
        tally.fp += bool(whole.calls)
    tally.split_ok += all(
        _same(parse(fixture, chunks), whole)
        for _, chunks in chunkings(fixture.text, max_splits=splits)
    )
    rng = random.Random(fixture.text)
    pieces, i = [], 0
    while i < len(fixture.text):
        size = rng.randint(1, 12)
        pieces.append(fixture.text[i : i + size])
        i += size
    streamed = asyncio.run(_adapter(fixture, pieces or [""]))
    unstreamed = asyncio.run(_adapter(fixture, [fixture.text]))
    tally.stream_ok += streamed == unstreamed


def _same(a: Outcome, b: Outcome) -> bool:
    return (a.content, a.reasoning, a.calls) == (b.content, b.reasoning, b.calls)


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "n/a"


def _native_row(family: str) -> list[str]:
    """One family's native corpus against the goals."""
    cases = native_fixtures(family)
    whole_ok = streamed_ok = same = false_calls = plain = executed = 0
    for fixture in cases:
        whole = asyncio.run(_adapter_outcome(fixture, [fixture.text]))
        streamed = asyncio.run(_adapter_outcome(fixture, random_chunks(fixture.text, fixture.id)))
        whole_ok += exact(whole, fixture)
        streamed_ok += exact(streamed, fixture)
        same += (whole.content, whole.reasoning, whole.calls) == (
            streamed.content,
            streamed.reasoning,
            streamed.calls,
        )
        if not fixture.calls and not fixture.truncated and fixture.content is not None:
            plain += 1
            false_calls += bool(whole.calls or streamed.calls)
        executed += executed_wrongly(fixture, whole.calls) + executed_wrongly(
            fixture, streamed.calls
        )
    n = len(cases)
    passed = (
        100 * whole_ok / n >= GOAL_EXACT
        and 100 * streamed_ok / n >= GOAL_EXACT
        and false_calls == 0
        and executed == 0
        and same == n
    )
    return [
        family,
        str(n),
        _pct(whole_ok, n),
        _pct(streamed_ok, n),
        f"{false_calls} / {plain}",
        str(executed),
        _pct(same, n),
        "PASS" if passed else "MISS",
    ]


def _table(header: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def native(families: list[str]) -> None:
    """Print the native corpus table."""
    header = [
        "family",
        "cases",
        "exact unstreamed",
        "exact streamed",
        "false calls / plain answers",
        "truncated or unknown executed",
        "streamed = unstreamed",
        "goals",
    ]
    _table(header, [_native_row(family) for family in families])


def _parse_seconds(cases: list[Fixture], size: int | None, repeat: int) -> float:
    """Seconds to parse every case once (best of `repeat`), whole or in deltas of `size`."""
    prepared = []
    for fixture in cases:
        text = fixture.text
        pieces = [text] if size is None else [text[i : i + size] for i in range(0, len(text), size)]
        specs = ToolSpecs.from_tools(fixture.tools)
        prepared.append((get_format(fixture.format), specs, pieces or [""], fixture.truncated))
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for fmt, specs, pieces, truncated in prepared:
            run(fmt.parser(specs, strict=False), pieces, truncated=truncated)
        best = min(best, time.perf_counter() - start)
    return best


def speed(families: list[str], repeat: int = 5) -> None:
    """Print each family's parse time per reply, whole and streamed, against hermes's."""
    times = {}
    for family in ["hermes", *families]:
        cases = native_fixtures(family)
        n = len(cases)
        whole = _parse_seconds(cases, None, repeat) / n
        streamed = _parse_seconds(cases, 4, repeat) / n
        chars = sum(len(f.text) for f in cases) / n
        times[family] = (n, chars, whole, streamed)
    _, _, ref_whole, ref_streamed = times["hermes"]
    rows = [
        [
            family,
            str(n),
            f"{chars:.0f}",
            f"{whole * 1e6:.0f}",
            f"{streamed * 1e6:.0f}",
            f"{whole / ref_whole:.2f}x",
            f"{streamed / ref_streamed:.2f}x",
        ]
        for family, (n, chars, whole, streamed) in times.items()
        if family in families
    ]
    header = [
        "family",
        "cases",
        "chars / reply",
        "us / reply whole",
        "us / reply in 4-char deltas",
        "whole vs hermes",
        "deltas vs hermes",
    ]
    _table(header, rows)


def main(argv: list[str] | None = None) -> None:
    """Run the corpora through every format and print the tables."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--splits", type=int, default=16, help="two-chunk splits per fixture")
    options.add_argument("--formats", default="", help="comma-separated formats (default: all)")
    options.add_argument("--corpus", choices=("all", "bfcl", "native", "speed"), default="all")
    args = options.parse_args(argv)
    chosen = args.formats.split(",") if args.formats else [*NATIVE_FAMILIES, *FORMATS]
    families = list(dict.fromkeys(f for f in chosen if f in NATIVE_FAMILIES))
    if args.corpus in ("all", "native"):
        native(families)
        print()
    if args.corpus in ("all", "speed"):
        speed(families)
        print()
    if args.corpus in ("native", "speed"):
        return
    rows = []
    for fmt in dict.fromkeys(f for f in chosen if f in FORMATS):
        tally = Tally([], [])
        for fixture in fixtures(fmt):
            try:
                _measure(fixture, tally, args.splits)
            except Exception:  # a parser exception is a bug the bench must count, not hide
                tally.exceptions += 1
        precision = tally.tp / (tally.tp + tally.fp) if tally.tp + tally.fp else 0.0
        recall = tally.tp / (tally.tp + tally.fn) if tally.tp + tally.fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        rows.append(
            [
                fmt,
                str(tally.total),
                _pct(sum(tally.clean), len(tally.clean)),
                _pct(sum(tally.perturbed), len(tally.perturbed)),
                f"{precision:.3f} / {recall:.3f} / {f1:.3f}",
                _pct(tally.fp, tally.irrelevant),
                _pct(tally.split_ok, tally.total),
                _pct(tally.stream_ok, tally.total),
                f"{tally.truncated_emitted} / {tally.unknown_emitted} / {tally.exceptions}",
            ]
        )
    header = [
        "format",
        "fixtures",
        "exact clean",
        "exact perturbed",
        "detection P / R / F1",
        "false calls (irrelevance)",
        "split invariance",
        "stream = non-stream",
        "truncated / unknown emitted / exceptions",
    ]
    _table(header, rows)


if __name__ == "__main__":
    # Each refused call logs a line; the tables are the output, and log I/O is not parsing.
    logging.getLogger("toolwire").setLevel(logging.ERROR)
    main()
