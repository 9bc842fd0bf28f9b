"""`cohere`: Cohere Command's calls, a JSON list between `<|START_ACTION|>` and
`<|END_ACTION|>` whose items are `{"tool_call_id": "0", "tool_name": …, "parameters": {…}}`
(Command R7B, Command A and A Vision, Command A Reasoning: vLLM's cohere_command3 and
cohere_command4, SGLang's command4 detector).

Reasoning is the leading `<|START_THINKING|>…<|END_THINKING|>` block (the tool plan); the
answer is wrapped in `<|START_RESPONSE|>…<|END_RESPONSE|>` (Command A Vision and Reasoning:
`<|START_TEXT|>…<|END_TEXT|>`), markers that carry nothing and are removed. The catalog is a
JSON list in a fenced block as Command A's template lays it out; results go back between
`<|START_TOOL_RESULT|>` and `<|END_TOOL_RESULT|>`, one item per call with its id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..scanning import BodyScanner, QuotedScanner
from ..toolspecs import ToolSpecs
from .base import KEEP_SPECIAL_TOKENS, CallText, catalog_tools, json_text
from .json_calls import Shape, decoder, finished
from .pythonic import known_only

START_ACTION, END_ACTION = "<|START_ACTION|>", "<|END_ACTION|>"
START_THINKING, END_THINKING = "<|START_THINKING|>", "<|END_THINKING|>"
START_RESULT, END_RESULT = "<|START_TOOL_RESULT|>", "<|END_TOOL_RESULT|>"
ANSWER_MARKERS = ("<|START_RESPONSE|>", "<|END_RESPONSE|>", "<|START_TEXT|>", "<|END_TEXT|>")
TOKENS = (
    START_ACTION,
    END_ACTION,
    START_THINKING,
    END_THINKING,
    START_RESULT,
    END_RESULT,
    *ANSWER_MARKERS,
    "<|START_OF_TURN_TOKEN|>",
    "<|END_OF_TURN_TOKEN|>",
)
KEYS = {"key": "parameters", "name": "tool_name", "call_id": "tool_call_id"}
"""Command's own keys of a call object."""
_PROMPT = """## Available Tools
Here is the list of tools you can use. Use only these tools:

```json
{tools}
```

## Tool Use
To use tools, first write your plan between <|START_THINKING|> and <|END_THINKING|>. Then \
write <|START_ACTION|>, a JSON list of tool calls, each with "tool_call_id", "tool_name" and \
"parameters" fields, and close it with <|END_ACTION|>:
<|START_ACTION|>[
    {{"tool_call_id": "0", "tool_name": "tool name", "parameters": {{"argument": "value"}}}}
]<|END_ACTION|>
{parallel}
The results will come back to you between <|START_TOOL_RESULT|> and <|END_TOOL_RESULT|> in \
the next turn; never write them yourself. When you can answer without tools, write the \
answer between <|START_RESPONSE|> and <|END_RESPONSE|>."""


class Cohere:
    """Command R7B and Command A: a JSON action list between special tokens."""

    name = "cohere"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = (START_RESULT,)
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = (START_THINKING, END_THINKING)

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """Command A's tool section: the tools as a fenced JSON list, then how to call."""
        functions = [{**t["function"], "responses": None} for t in catalog_tools(catalog)]
        line = (
            "List independent calls together in one action."
            if parallel
            else "Put at most one call in an action."
        )
        return _PROMPT.format(tools=json_text(functions, TOKENS, indent=4), parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One action holding every call, numbered from 0."""
        items = ",\n".join(
            "    " + json_text({"tool_call_id": str(i), "tool_name": n, "parameters": a}, TOKENS)
            for i, (n, a) in enumerate(calls)
        )
        return f"{START_ACTION}[\n{items}\n]{END_ACTION}"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """One result list, each result under its call's number."""
        items = [
            {"tool_call_id": str(i), "results": {"0": {"content": content}}, "is_error": None}
            for i, (_, content) in enumerate(results)
        ]
        return f"{START_RESULT}{json_text(items, TOKENS, indent=4)}{END_RESULT}"

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser reading action lists, after a leading thinking block."""
        envelope = Envelope(
            START_ACTION,
            END_ACTION,
            _scanner,
            finished=known_only(finished(**KEYS), specs),
        )
        inner = TaggedParser(
            specs,
            known_only(decoder(Shape.LIST, **KEYS), specs),
            [envelope],
            strict=strict,
            stops=(START_RESULT, "<|START_OF_TURN_TOKEN|>"),
            drop=ANSWER_MARKERS,
        )
        return ThinkingParser(inner, open=START_THINKING, close=END_THINKING)


def _scanner(lenient: bool) -> BodyScanner:
    # A new action outside strings means the model forgot to close the previous one.
    return QuotedScanner(END_ACTION, ends=(START_ACTION,) if lenient else ())
