"""A version's name: a format that prompts and writes history as one version of a family does,
and reads replies with the family's parser (which reads every version's syntax).

Users who configure `kimi-k3` or `llama4-pythonic` get that version's own prompt and the
history in its own syntax; whatever version the model turns out to write, it is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import CallIds
from ..parser import Parser
from ..toolspecs import ToolSpecs
from .base import CallText, EmulationFormat


class Version:
    """`writes`' prompt, history and request fields under `name`; `reads`' parser."""

    def __init__(self, name: str, writes: EmulationFormat, reads: EmulationFormat) -> None:
        self.name = name
        self._writes, self._reads = writes, reads
        self.stops: tuple[str, ...] = tuple(dict.fromkeys((*writes.stops, *reads.stops)))
        self.think_tags: tuple[str, str] | None = reads.think_tags
        self.think_tags_also: tuple[tuple[str, str], ...] = getattr(reads, "think_tags_also", ())
        self.request_fields: Mapping[str, Any] = {**reads.request_fields, **writes.request_fields}
        self.call_ids: CallIds = writes.call_ids

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The version's own tool block."""
        return self._writes.system_prompt(catalog, parallel=parallel)

    def render_calls(self, calls: list[CallText]) -> str:
        """Earlier calls in the version's syntax."""
        return self._writes.render_calls(calls)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """Tool results as the version's template gives them back."""
        return self._writes.render_results(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """The family's parser: it reads every version's syntax."""
        return self._reads.parser(specs, strict=strict)
