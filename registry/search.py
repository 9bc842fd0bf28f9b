"""Searching a set of tools by words: how deferred tools are found (`tool_search`)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from registry.tool import Tool

__all__ = ["ToolIndex"]

_WORD = re.compile(r"[A-Za-z][a-z]*|[0-9]+")
_NAME_WEIGHT = 2.0


@dataclass(frozen=True, slots=True)
class _Document:
    tool: Tool
    name_words: frozenset[str]
    words: frozenset[str]


class ToolIndex:
    """A small inverted-frequency index over tool names, descriptions, hints and tags."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self._docs = tuple(_document(tool) for tool in tools)
        frequency: Counter[str] = Counter()
        for doc in self._docs:
            frequency.update(doc.words)
        total = max(1, len(self._docs))
        self._idf = {w: math.log(1 + total / n) for w, n in frequency.items()}

    def __len__(self) -> int:
        return len(self._docs)

    def search(self, query: str, *, limit: int = 5) -> list[Tool]:
        """The best-matching tools, best first; words match whole, as a prefix or inside."""
        terms = _words(query)
        if not terms:
            return []
        scored = []
        for position, doc in enumerate(self._docs):
            score = sum(self._term_score(term, doc) for term in terms)
            if score > 0:
                scored.append((-score, position, doc.tool))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [tool for _, _, tool in scored[: max(0, limit)]]

    def _term_score(self, term: str, doc: _Document) -> float:
        best = 0.0
        for word in doc.words:
            if word == term:
                share = 1.0
            elif len(term) >= 3 and word.startswith(term):
                share = 0.5
            elif len(term) >= 4 and term in word:
                share = 0.3
            else:
                continue
            weight = self._idf.get(word, 0.0) * (_NAME_WEIGHT if word in doc.name_words else 1)
            best = max(best, weight * share)
        return best


def _document(tool: Tool) -> _Document:
    name_words = _words(tool.qualified_name)
    text = " ".join(
        [tool.description, tool.metadata.search_hint or "", " ".join(tool.metadata.tags)]
    )
    return _Document(tool, name_words, name_words | _words(text))


def _words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))
