"""`trinity`: Arcee Trinity's calls, Qwen's `<tool_call>{"name": …, "arguments": {…}}</tool_call>`
blocks, which it may also write inside its `<think>` block (SGLang's trinity detector reads
them there too): those run as calls, and the reasoning around them stays reasoning. The tool
block and the results are Hermes/Qwen's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Parser
from ..reasoning import ThinkingParser
from ..toolspecs import ToolSpecs
from .base import THINK_TAGS, CallText
from .hermes import Hermes, tagged

_HERMES = Hermes()


class Trinity:
    """Arcee Trinity: Qwen's JSON calls, read inside its reasoning too."""

    name = "trinity"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = _HERMES.stops
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """Qwen's tool block."""
        return _HERMES.system_prompt(catalog, parallel=parallel)

    def render_calls(self, calls: list[CallText]) -> str:
        """`<tool_call>` blocks, one per call."""
        return _HERMES.render_calls(calls)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order."""
        return _HERMES.render_results(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """Qwen's tagged parser after the reasoning block, and another inside it."""
        return ThinkingParser(tagged(specs, strict=strict), inside=tagged(specs, strict=strict))
