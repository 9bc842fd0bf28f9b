"""`apertus`: Swiss AI Apertus's tool calls, one JSON list of `{"NAME": {arguments}}` objects.

    <|inner_prefix|>The user wants the weather.<|inner_suffix|>
    <|tools_prefix|>[{"get_weather": {"city": "Paris"}}, {"ping": {}}]<|tools_suffix|>

The list ends the block by itself (a missing `<|tools_suffix|>` costs nothing); prose may come
before it. Reasoning is an `<|inner_prefix|>…<|inner_suffix|>` block (a `<think>` one is read
too). The markers are special tokens. A list cut off by the length limit runs the calls the
model completed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..scanning import neutralise_tokens
from ..toolspecs import ToolSpecs
from .base import KEEP_SPECIAL_TOKENS, CallText, catalog_tools, json_text
from .marked_json import completed_keyed_calls, keyed_calls, value_envelope
from .pythonic import known_only

PREFIX, SUFFIX = "<|tools_prefix|>", "<|tools_suffix|>"
INNER_PREFIX, INNER_SUFFIX = "<|inner_prefix|>", "<|inner_suffix|>"
TOKENS = (PREFIX, SUFFIX, INNER_PREFIX, INNER_SUFFIX, "<|assistant_end|>", "<|user_start|>")
STOPS = ("<|user_start|>", "<|system_start|>", "<|developer_start|>")
_PROMPT = """Tool Capabilities:
{tools}

To call tools, write {prefix} then one JSON list holding an object per call, the tool's name \
as its key and the arguments as its value, then {suffix}:
{prefix}[{{"tool_name": {{"argument": "value"}}}}]{suffix}
{parallel}
If no tool is needed, answer normally. Results come back in the next message; never write \
them yourself."""


class Apertus:
    """Apertus: `<|tools_prefix|>[{"NAME": {…}}]<|tools_suffix|>`."""

    name = "apertus"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = STOPS
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = (INNER_PREFIX, INNER_SUFFIX)

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tool capabilities (one JSON schema a line), then how to call."""
        tools = "\n".join(json_text(t["function"], TOKENS) for t in catalog_tools(catalog))
        line = "You may put several calls in the list." if parallel else "Put one call in the list."
        return _PROMPT.format(tools=tools, prefix=PREFIX, suffix=SUFFIX, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One list holding every call."""
        return PREFIX + json_text([{name: arguments} for name, arguments in calls], TOKENS) + SUFFIX

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """The results as a JSON list of the tools' outputs, in call order."""
        outputs = [{"name": name, "output": content} for name, content in results]
        return neutralise_tokens(json_text(outputs, TOKENS), TOKENS)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A parser reading the keyed list after `<|tools_prefix|>`."""
        envelope = value_envelope(PREFIX, finished=known_only(completed_keyed_calls, specs))
        inner = TaggedParser(
            specs,
            known_only(keyed_calls, specs),
            [envelope],
            strict=strict,
            stops=STOPS,
            drop=(SUFFIX, "<|assistant_end|>"),
        )
        return ThinkingParser(ThinkingParser(inner), open=INNER_PREFIX, close=INNER_SUFFIX)
