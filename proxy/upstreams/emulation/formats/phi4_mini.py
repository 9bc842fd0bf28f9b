"""`phi4-mini`: Microsoft Phi-4-mini's tool calls.

    Let me check.
    functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]

`functools` then one JSON list of every call of the reply, right after it; prose may come
before and after. A list between its `<|tool_call|>` and `<|/tool_call|>` tokens is read
too. A call object's arguments may be under `parameters`. `functools` counts
only when a list of call objects follows (`[` then `{`): the word in prose stays prose. The
template lists the tools as a JSON array between its `<|tool|>` tokens in the system message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..scanning import BodyScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from . import json_calls
from .base import KEEP_SPECIAL_TOKENS, THINK_TAGS, CallText, catalog_tools, json_text
from .pythonic import known_only

MARKER = "functools"
CALL, CALL_END = "<|tool_call|>", "<|/tool_call|>"
TOKENS = ("<|tool|>", "<|/tool|>", CALL, CALL_END, "<|end|>", "<|user|>")
_PROMPT = """You are a helpful assistant with some tools.<|tool|>{tools}<|/tool|>

To call functions, write functools followed by a JSON list of the calls, each an object with \
the function's name and its arguments:
functools[{{"name": "function_name", "arguments": {{"argument": "value"}}}}]
{parallel}
If no function is needed, answer normally. Results come back in the next turn; never write \
them yourself."""


class Phi4Mini:
    """`functools[…]`: one JSON list of calls per reply."""

    name = "phi4-mini"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<|user|>", "<|tool_response|>")
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tools as a JSON array between `<|tool|>` tokens, then how to call."""
        tools = json_text([t["function"] for t in catalog_tools(catalog)], TOKENS)
        return _PROMPT.format(tools=tools, parallel=json_calls.list_line(parallel))

    def render_calls(self, calls: list[CallText]) -> str:
        """`functools` and the JSON list."""
        return MARKER + json_calls.render_list(calls, TOKENS)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """The results' text, in call order."""
        return "\n\n".join(neutralise_tokens(content, TOKENS) for _, content in results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser whose calls open at `functools` and end with their list."""
        finished = known_only(json_calls.finished(key="parameters"), specs)
        envelopes = [
            Envelope(MARKER, "", _scanner, finished=finished),
            json_calls.list_envelope(CALL, CALL_END, specs),
        ]
        decode = known_only(json_calls.decoder(json_calls.Shape.LIST, key="parameters"), specs)
        inner = TaggedParser(specs, decode, envelopes, strict=strict, stops=self.stops)
        return ThinkingParser(inner)


def _scanner(lenient: bool) -> BodyScanner:
    return json_calls.ListScanner()
