"""The hand-written native-format corpus (tests/proxy/upstreams/emulation/corpus/<family>.json)
as fixtures, and the replays the test and bench/emulation.py put them through."""

from __future__ import annotations

import json
import random
from functools import cache
from pathlib import Path
from typing import Any

from proxy.upstreams.emulation.formats import FORMAT_NAMES, GENERIC, family_of
from tests.proxy.upstreams.emulation.corpus import Fixture, exact, parse

CORPUS = Path(__file__).with_name("corpus")
NATIVE_FAMILIES = tuple(name for name in FORMAT_NAMES if name not in GENERIC)
"""The formats a model family was trained on (pythonic and json are Toolwire's own): each
family's name and each version's."""
OWN_CORPUS = tuple(name for name in NATIVE_FAMILIES if (CORPUS / f"{name}.json").exists())
"""The names with a corpus of their own: every family's, and the versions that read
differently; the deltas of every size run over these."""
BORROWED = tuple(name for name in NATIVE_FAMILIES if name not in OWN_CORPUS)
"""Version names that read their family's corpus with the family's parser: read whole."""


@cache
def _load(name: str) -> dict[str, Any]:
    # A version without a corpus of its own reads its family's: its parser is the family's.
    path = CORPUS / f"{name}.json"
    if not path.exists():
        path = CORPUS / f"{family_of(name)}.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def native_fixtures(family: str) -> list[Fixture]:
    """Every case of one family's corpus file (a version's own, or else its family's)."""
    data = _load(family)
    return [
        Fixture(
            case["id"],
            family,
            "native",
            case["tag"],
            data["tools"],
            case["text"],
            [(name, args) for name, args in case["calls"]],
            case["content"],
            case["truncated"],
            reasoning=case["reasoning"],
        )
        for case in data["cases"]
    ]


def random_chunks(text: str, seed: str, *, largest: int = 12) -> list[str]:
    """The text in random pieces of 1 to `largest` characters (seeded: the same every run)."""
    rng = random.Random(seed)
    pieces, i = [], 0
    while i < len(text):
        size = rng.randint(1, largest)
        pieces.append(text[i : i + size])
        i += size
    return pieces or [""]


def executed_wrongly(fixture: Fixture, calls: list[tuple[str, Any]]) -> int:
    """Calls that must never run: unknown tools, and (cut off) calls the case does not expect."""
    names = {t["function"]["name"] for t in fixture.tools}
    unknown = sum(1 for name, _ in calls if name not in names)
    cut = len(calls) - len(fixture.calls) if fixture.truncated else 0
    return unknown + max(cut, 0)


__all__ = [
    "BORROWED",
    "NATIVE_FAMILIES",
    "OWN_CORPUS",
    "exact",
    "native_fixtures",
    "parse",
    "random_chunks",
]
