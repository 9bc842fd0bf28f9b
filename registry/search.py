"""Searching a set of tools by words: how deferred tools are found (`tool_search`)."""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter, defaultdict
from collections.abc import Collection, Sequence

from registry.tool import Tool

__all__ = ["ToolIndex"]

_WORD = re.compile(r"[A-Za-z][a-z]*|[0-9]+")
_NAME_WEIGHT = 2.0
_COMMON = 0.5
"""Words in more than this share of the tools say nothing about any one of them."""


class ToolIndex:
    """An inverted index over tool names, descriptions, hints and tags.

    A query word matches an indexed word whole (full weight), as its prefix (half, from 3
    letters) or inside it (0.3, from 4 letters); a word's weight is its inverse document
    frequency, doubled when it is in the tool's name. A tool scores the best match of each
    query word, summed. Only the vocabulary is scanned per query word (and remembered), so
    a search costs what the matching postings cost, not the size of the catalog.
    """

    def __init__(self, tools: Sequence[Tool]) -> None:
        self._tools = tuple(tools)
        self._positions = {tool.qualified_name: i for i, tool in enumerate(self._tools)}
        documents = [_document(tool) for tool in self._tools]
        frequency: Counter[str] = Counter()
        for words, _ in documents:
            frequency.update(words)
        total = max(1, len(documents))
        common = total * _COMMON if total >= 20 else total + 1
        idf = {w: math.log(1 + total / n) for w, n in frequency.items() if n <= common}
        self._postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for position, (words, name_words) in enumerate(documents):
            for word in words:
                if word in idf:
                    weight = idf[word] * (_NAME_WEIGHT if word in name_words else 1.0)
                    self._postings[word].append((position, weight))
        self._matches: dict[str, tuple[tuple[str, float], ...]] = {}

    def __len__(self) -> int:
        return len(self._tools)

    def positions(self, names: Collection[str]) -> frozenset[int]:
        """The index positions of the tools named (qualified names), for `search`."""
        return frozenset(self._positions[n] for n in names if n in self._positions)

    def search(
        self, query: str, *, limit: int = 5, allowed: frozenset[int] | None = None
    ) -> list[Tool]:
        """The best-matching tools, best first (ties in index order); only those at the
        `allowed` positions (see `positions`), when given."""
        scores: dict[int, float] = defaultdict(float)
        for term in _words(query):
            best: dict[int, float] = {}
            for word, share in self._matching(term):
                for position, weight in self._postings[word]:
                    score = weight * share
                    if score > best.get(position, 0.0):
                        best[position] = score
            for position, score in best.items():
                scores[position] += score
        if allowed is None:
            keyed = [(-score, position) for position, score in scores.items()]
        else:
            keyed = [
                (-score, position) for position, score in scores.items() if position in allowed
            ]
        # Plain tuples: the heap compares them in C (a key function costs more than the rest).
        return [self._tools[position] for _, position in heapq.nsmallest(max(0, limit), keyed)]

    def _matching(self, term: str) -> tuple[tuple[str, float], ...]:
        """The indexed words `term` matches, with the share of their weight it earns."""
        found = self._matches.get(term)
        if found is None:
            matches = []
            for word in self._postings:
                if word == term:
                    matches.append((word, 1.0))
                elif len(term) >= 3 and word.startswith(term):
                    matches.append((word, 0.5))
                elif len(term) >= 4 and term in word:
                    matches.append((word, 0.3))
            found = tuple(matches)
            if len(self._matches) < 10_000:
                self._matches[term] = found
        return found


def _document(tool: Tool) -> tuple[frozenset[str], frozenset[str]]:
    """A tool's words, and those of its name."""
    name_words = _words(tool.qualified_name)
    text = " ".join(
        [tool.description, tool.metadata.search_hint or "", " ".join(tool.metadata.tags)]
    )
    return name_words | _words(text), name_words


def _words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))
