"""`cohere`: Cohere Command's calls, a JSON list between `<|START_ACTION|>` and
`<|END_ACTION|>` whose items are `{"tool_call_id": "0", "tool_name": …, "parameters": {…}}`
(Command R7B, Command A and A Vision, Command A Reasoning: vLLM's cohere_command3 and
cohere_command4, SGLang's command4 detector).

Reasoning is the leading `<|START_THINKING|>…<|END_THINKING|>` block (the tool plan); the
answer is wrapped in `<|START_RESPONSE|>…<|END_RESPONSE|>` (Command A Vision and Reasoning:
`<|START_TEXT|>…<|END_TEXT|>`), markers that carry nothing and are removed. The catalog is a
JSON list in a fenced block as Command A's template lays it out; results go back between
`<|START_TOOL_RESULT|>` and `<|END_TOOL_RESULT|>`, one item per call with its id.

Command R and R+ (2024) write the same list after `Action: ```json`, closed by the fence; the
family's name reads it too, and the version name `command-r` prompts and writes it, its
results as `<results>` documents.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..scanning import BodyScanner, QuotedScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from .base import KEEP_SPECIAL_TOKENS, CallText, catalog_tools, json_text
from .json_calls import Shape, decoder, finished
from .pythonic import known_only

START_ACTION, END_ACTION = "<|START_ACTION|>", "<|END_ACTION|>"
START_THINKING, END_THINKING = "<|START_THINKING|>", "<|END_THINKING|>"
START_RESULT, END_RESULT = "<|START_TOOL_RESULT|>", "<|END_TOOL_RESULT|>"
ACTION_FENCE, FENCE_END = "Action: ```json", "```"
RESULTS = "<results>"
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
        """A parser of every version's action lists, after a leading thinking block."""
        return parser(specs, strict=strict)


_COMMAND_R_PROMPT = """## Available Tools
Here is a list of tools that you have available to you, as JSON:

```json
{tools}
```

Write 'Action:' followed by a json-formatted list of the actions you want to perform to answer \
the user's last input, each with "tool_name" and "parameters" fields:
Action: ```json
[
    {{
        "tool_name": "tool name",
        "parameters": {{"argument": "value"}}
    }}
]
```
{parallel}
The results will come back to you in <results>; never write them yourself. When no tool is \
needed, answer directly."""


class CommandR:
    """Command R and R+ (2024): the action list after `Action: ```json`."""

    name = "command-r"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = (RESULTS,)
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = None

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """Command R's tool section, the tools as JSON."""
        functions = [t["function"] for t in catalog_tools(catalog)]
        line = "You may list several actions at once." if parallel else "List at most one action."
        tools = json_text(functions, TOKENS, indent=4)
        return _COMMAND_R_PROMPT.format(tools=tools, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One fenced action list."""
        items = [{"tool_name": n, "parameters": a} for n, a in calls]
        return f"{ACTION_FENCE}\n{json_text(items, TOKENS, indent=4)}\n{FENCE_END}"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """The results as numbered documents."""
        documents = "\n\n".join(
            f"Document: {i}\ntool: {name}\n{neutralise_tokens(content, (RESULTS, '</results>'))}"
            for i, (name, content) in enumerate(results)
        )
        return f"{RESULTS}\n{documents}\n</results>"

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """The family's parser (every version's action lists)."""
        return parser(specs, strict=strict)


def parser(specs: ToolSpecs, *, strict: bool) -> Parser:
    """Action lists between Command A's tokens or after Command R's `Action: ```json`, after a
    leading thinking block."""
    done = known_only(finished(**KEYS), specs)
    envelopes = [
        Envelope(START_ACTION, END_ACTION, _scanner, finished=done),
        Envelope(ACTION_FENCE, FENCE_END, _fence_scanner, finished=done),
    ]
    inner = TaggedParser(
        specs,
        known_only(decoder(Shape.LIST, **KEYS), specs),
        envelopes,
        strict=strict,
        stops=(START_RESULT, "<|START_OF_TURN_TOKEN|>", RESULTS),
        drop=ANSWER_MARKERS,
    )
    return ThinkingParser(inner, open=START_THINKING, close=END_THINKING)


def _scanner(lenient: bool) -> BodyScanner:
    # A new action outside strings means the model forgot to close the previous one.
    return QuotedScanner(END_ACTION, ends=(START_ACTION,) if lenient else ())


def _fence_scanner(lenient: bool) -> BodyScanner:
    return QuotedScanner(FENCE_END)
