"""`jamba`: AI21 Jamba's tool calls (Jamba 1.5, 1.6, 1.7, Mini and Large alike).

    Let me check.<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>

One `<tool_calls>` block holds a JSON list of every call of the reply; prose may come before
it. `<tool_calls>`, `</tool_calls>` and `<tool_definitions>` are special tokens. The
template lists the tools as indented JSON in `<tool_definitions>` in the system message;
results come back as `tool` turns, here their text in call order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Parser
from ..reasoning import ThinkingParser
from ..scanning import neutralise_tokens
from ..toolspecs import ToolSpecs
from . import json_calls
from .base import KEEP_SPECIAL_TOKENS, THINK_TAGS, CallText, catalog_tools, json_text

OPEN, CLOSE = "<tool_calls>", "</tool_calls>"
TOKENS = (OPEN, CLOSE, "<tool_definitions>", "</tool_definitions>", "<|bom|>", "<|eom|>")
_PROMPT = """<tool_definitions>
# Tools

## Functions

{tools}
</tool_definitions>

To call functions, write them as one JSON list inside {open}{close}, each call an object \
with the function's name and its arguments:
{open}[{{"name": "function_name", "arguments": {{"argument": "value"}}}}]{close}
{parallel}
If no function is needed, answer normally. Results come back in the next turn; never write \
them yourself."""


class Jamba:
    """One `<tool_calls>` JSON list per reply."""

    name = "jamba"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<|tool|>",)
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The `<tool_definitions>` section, then how to call."""
        tools = "\n\n".join(
            json_text(tool["function"], TOKENS, indent=2) for tool in catalog_tools(catalog)
        )
        return _PROMPT.format(
            tools=tools, open=OPEN, close=CLOSE, parallel=json_calls.list_line(parallel)
        )

    def render_calls(self, calls: list[CallText]) -> str:
        """One `<tool_calls>` list holding every call."""
        return OPEN + json_calls.render_list(calls, TOKENS) + CLOSE

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """The results' text, in call order."""
        return "\n\n".join(neutralise_tokens(content, TOKENS) for _, content in results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser reading the block's JSON list."""
        inner = json_calls.list_parser(specs, OPEN, CLOSE, strict=strict, stops=self.stops)
        return ThinkingParser(inner)
