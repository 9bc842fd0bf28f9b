"""`lfm2`: Liquid LFM2 and LFM2.5's calls, a Python call list between special tokens
(`<|tool_call_start|>[get_weather(city="SF")]<|tool_call_end|>`), read as the `pythonic`
format reads its lists; a JSON list of `{"name": …, "arguments": {…}}` objects in the same
tokens (what the model writes when its system prompt asks for JSON) is read too.

The catalog is the template's `List of tools: <|tool_list_start|>[…]<|tool_list_end|>`; results
go back between `<|tool_response_start|>` and `<|tool_response_end|>`, as LFM2's template wraps
the tool role's content. Text may come before and after the block.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, call_from_object, load_value, stripped_candidates
from ..scanning import BodyScanner, QuotedScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from . import pythonic
from .base import KEEP_SPECIAL_TOKENS, THINK_TAGS, CallText, catalog_tools, escape_tokens

CALL_START, CALL_END = "<|tool_call_start|>", "<|tool_call_end|>"
RESULT_START, RESULT_END = "<|tool_response_start|>", "<|tool_response_end|>"
TOKENS = (
    CALL_START,
    CALL_END,
    RESULT_START,
    RESULT_END,
    "<|tool_list_start|>",
    "<|tool_list_end|>",
    "<|im_start|>",
    "<|im_end|>",
)
_PROMPT = """List of tools: <|tool_list_start|>[{tools}]<|tool_list_end|>

To call tools, write a Python list of calls between <|tool_call_start|> and \
<|tool_call_end|>, with keyword arguments and literal values only:
<|tool_call_start|>[tool_name(argument="value", other=2)]<|tool_call_end|>
{parallel}
If no tool is needed, answer normally. Results come back between <|tool_response_start|> and \
<|tool_response_end|>; never write them yourself."""


class Lfm2:
    """LFM2 and LFM2.5: Python call lists between special tokens."""

    name = "lfm2"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = (RESULT_START,)
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The template's tool list, then how to call."""
        tools = ", ".join(
            escape_tokens(json.dumps(t["function"], ensure_ascii=False), TOKENS)
            for t in catalog_tools(catalog)
        )
        line = (
            "You may put several calls in the list."
            if parallel
            else "Put at most one call in the list."
        )
        return _PROMPT.format(tools=tools, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One block holding every call."""
        listed = ", ".join(pythonic.call_text(n, a) for n, a in calls)
        return f"{CALL_START}[{escape_tokens(listed, TOKENS)}]{CALL_END}"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """Each result between the response tokens, in call order."""
        return "\n".join(
            f"{RESULT_START}{neutralise_tokens(content, TOKENS)}{RESULT_END}"
            for _, content in results
        )

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser reading Python (or JSON) call lists between the call tokens."""
        inner = TaggedParser(
            specs,
            pythonic.known_only(decode, specs),
            [Envelope(CALL_START, CALL_END, _scanner, finished=pythonic.finished_calls)],
            strict=strict,
            stops=(RESULT_START, "<|im_start|>"),
        )
        return ThinkingParser(inner)


def _scanner(lenient: bool) -> BodyScanner:
    # A new start token outside strings means the model forgot to close the previous block.
    return QuotedScanner(CALL_END, ends=(CALL_START,) if lenient else (), quotes="\"'")


def decode(body: str, lenient: bool) -> Decoded | None:
    """The calls of a Python call list, or of a JSON list of call objects."""
    if not body.strip().removeprefix("[").lstrip().startswith("{"):
        return pythonic.decode(body, lenient)
    for text, repairs in stripped_candidates(body, lenient):
        value = load_value(text, lenient, repairs)
        if isinstance(value, list) and value:
            calls = [call_from_object(item, lenient, repairs) for item in value]
            if all(call is not None for call in calls):
                return [call for call in calls if call is not None], repairs
    return None
