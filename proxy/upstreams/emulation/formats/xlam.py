"""`xlam`: Salesforce xLAM's tool calls (xLAM-1 and xLAM-2, Llama and Qwen based).

    [{"name": "get_weather", "arguments": {"city": "Paris"}}]

The reply that calls tools is one JSON list of call objects, read where xLAM writes it: as
the reply itself (after a `<think>` block too), in a code fence after prose, after
`[TOOL_CALLS]`, or inside `<tool_call>…</tool_call>`. A bare list counts only at the reply's
start and only when it opens with `[` and `{`; a fence counts only when it holds such a list
(a fenced JSON object is an example, not a call). Tools are listed as a JSON array after the
template's instructions; results go back as the tool turn's text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded
from ..scanning import BodyScanner, QuotedScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from . import json_calls
from .base import THINK_TAGS, CallText, catalog_tools, json_text
from .pythonic import known_only

FENCE = json_calls.FENCE
TOKENS = ("[TOOL_CALLS]", "<tool_call>", "</tool_call>", FENCE)
_FENCED = re.compile(r"```[\w+-]*[ \t]*\n(.*?)\s*(?:```)?", re.DOTALL)
_PROMPT = """You have access to a set of tools. When using tools, make calls in a single JSON \
array:

[{{"name": "tool_call_name", "arguments": {{"arg1": "value1", "arg2": "value2"}}}}, ... \
(additional parallel tool calls as needed)]

{parallel}
If no tool is suitable, state that explicitly. If the user's input lacks required \
parameters, ask for clarification. Do not interpret or respond until tool results are \
returned. Once they are available, process them or make additional calls if needed. For \
tasks that don't require tools, such as casual conversation or general advice, respond \
directly in plain text. The available tools are:

{tools}"""


class Xlam:
    """One JSON list of calls per reply, bare, fenced or after a marker."""

    name = "xlam"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<|start_header_id|>", "<|im_start|>")
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """xLAM-2's instructions, then the tools as one indented JSON array."""
        tools = json_text([t["function"] for t in catalog_tools(catalog)], TOKENS, indent=4)
        return _PROMPT.format(tools=tools, parallel=json_calls.list_line(parallel, "array"))

    def render_calls(self, calls: list[CallText]) -> str:
        """The bare JSON list."""
        return json_calls.render_list(calls, TOKENS)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """The results' text, in call order."""
        return "\n\n".join(neutralise_tokens(content, TOKENS) for _, content in results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser with an envelope for each place xLAM puts its list."""
        finished = known_only(json_calls.finished(), specs)
        envelopes = [
            Envelope("[", "", _bare, keep_markers=True, at_start=True, finished=finished),
            Envelope("[TOOL_CALLS]", "", _bare, finished=finished),
            Envelope("<tool_call>", "</tool_call>", _tagged, finished=finished),
            Envelope(FENCE, FENCE, _fenced, keep_markers=True, finished=finished),
        ]
        decode_known = known_only(decode, specs)
        inner = TaggedParser(specs, decode_known, envelopes, strict=strict, stops=self.stops)
        return ThinkingParser(inner)


_LIST = json_calls.decoder(json_calls.Shape.LIST)


def decode(body: str, lenient: bool) -> Decoded | None:
    """The calls of a list (lenient, inside `<tool_call>`, a lone object too); a fenced body
    must hold a list."""
    text = body.strip()
    if text.startswith(FENCE):
        fenced = _FENCED.fullmatch(text)
        if fenced is None or not fenced.group(1).startswith("["):
            return None
        text = fenced.group(1)
    return _LIST(text, lenient)


def _tagged(lenient: bool) -> BodyScanner:
    return QuotedScanner("</tool_call>", ends=("<tool_call>",) if lenient else ())


def _bare(lenient: bool) -> BodyScanner:
    return json_calls.ListScanner()


def _fenced(lenient: bool) -> BodyScanner:
    return json_calls.ListScanner(fence=FENCE)
