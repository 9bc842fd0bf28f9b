"""`internlm`: InternLM2, InternLM2.5, InternLM3 and Intern-S1's tool calls.

    Let me check.<|action_start|><|plugin|>
    {"name": "get_weather", "parameters": {"city": "Paris"}}<|action_end|>

One action block per call: `<|action_start|>`, the `<|plugin|>` channel (blanks around it
allowed), one JSON call object with its arguments under `parameters` (`arguments` read too),
`<|action_end|>`. Another channel (`<|interpreter|>`'s code) is not a function call and
stays text. The template declares the tools as a JSON array in a `system name=<|plugin|>`
turn and gives results back in an `environment` turn; Intern-S1 may reason in `<think>`
first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..scanning import BodyScanner, QuotedScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from . import json_calls
from .base import KEEP_SPECIAL_TOKENS, THINK_TAGS, CallText, catalog_tools, json_text

START, PLUGIN, END = "<|action_start|>", "<|plugin|>", "<|action_end|>"
TOKENS = (START, PLUGIN, END, "<|interpreter|>", "<|im_start|>", "<|im_end|>")
_PROMPT = """You can use the following tools, given as JSON in the plugin's description:
{tools}

To call a tool, write {start}{plugin} then, on a new line, a JSON object with the tool's name \
and its parameters, then {end}:
{start}{plugin}
{{"name": "tool_name", "parameters": {{"argument": "value"}}}}{end}
{parallel}
If no tool is needed, answer directly. Results come back from the environment; never write \
them yourself."""


class InternLM:
    """Action blocks on the plugin channel, one JSON call each."""

    name = "internlm"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<|im_start|>",)
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tools as one JSON array, then the action block's syntax."""
        tools = json_text([t["function"] for t in catalog_tools(catalog)], TOKENS, indent=4)
        line = (
            "You may write several action blocks in one reply."
            if parallel
            else "Write at most one action block per reply."
        )
        return _PROMPT.format(tools=tools, start=START, plugin=PLUGIN, end=END, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One action block per call."""
        return "\n".join(
            f"{START}{PLUGIN}\n{json_text({'name': n, 'parameters': a}, TOKENS)}{END}"
            for n, a in calls
        )

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """The results' text, in call order."""
        return "\n\n".join(neutralise_tokens(content, TOKENS) for _, content in results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser per action block, reading its plugin call."""
        decode = json_calls.decoder(json_calls.Shape.OBJECT, key="parameters", head=PLUGIN)
        envelope = Envelope(START, END, _scanner)
        return ThinkingParser(
            TaggedParser(specs, decode, [envelope], strict=strict, stops=self.stops)
        )


def _scanner(lenient: bool) -> BodyScanner:
    # A new action outside strings means the model forgot to end the previous one.
    return QuotedScanner(END, ends=(START,) if lenient else ())
