"""`plamo`: PLaMo 3's calls, each a request of marked name and JSON arguments inside a
section of requests (vLLM's plamo3 parser):

    <|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>
    <|plamo:begin_tool_name:plamo|>get_weather<|plamo:end_tool_name:plamo|>
    <|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{"city": "Tokyo"}
    <|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>
    <|plamo:end_tool_requests:plamo|><|plamo:tag|>

(one line in the model's output). The `<|plamo:constrain|>json` before the arguments may be
left out; empty arguments are `{}`. The section's markers carry nothing; `<|plamo:tag|>` ends
the turn, so text after it is not the answer. Reasoning is a leading
`<|plamo:begin_think:plamo|>…<|plamo:end_think:plamo|>` block. The markers are plain text to
the tokenizer (several tokens each), so no special-token flag is needed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, load_value, stripped_candidates
from ..scanning import BodyScanner, QuotedScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from .base import CallText, catalog_tools, json_text
from .pythonic import known_only


def _tag(edge: str, name: str) -> str:
    return f"<|plamo:{edge}_{name}:plamo|>"


REQUESTS, END_REQUESTS = _tag("begin", "tool_requests"), _tag("end", "tool_requests")
REQUEST, END_REQUEST = _tag("begin", "tool_request"), _tag("end", "tool_request")
NAME, END_NAME = _tag("begin", "tool_name"), _tag("end", "tool_name")
ARGUMENTS, END_ARGUMENTS = _tag("begin", "tool_arguments"), _tag("end", "tool_arguments")
THINK, END_THINK = _tag("begin", "think"), _tag("end", "think")
JSON_MESSAGE = "<|plamo:constrain|>json<|plamo:msg|>"
EOT = "<|plamo:tag|>"
TOKENS = (REQUESTS, END_REQUESTS, REQUEST, END_REQUEST, NAME, END_NAME, ARGUMENTS, EOT)
_REQUEST = re.compile(
    rf"\s*{re.escape(NAME)}\s*([^\s<]+)\s*{re.escape(END_NAME)}\s*{re.escape(ARGUMENTS)}"
    r"(?:<\|plamo:constrain\|>\s*json\s*)?(?:<\|plamo:msg\|>)?"
    rf"(.*){re.escape(END_ARGUMENTS)}\s*",
    re.DOTALL,
)
_PROMPT = """# Tools
You can use these tools, given as a JSON list:
{tools}

To use tools, write one section of requests, each request holding a tool's name and its \
arguments as a JSON object:
{example}
{parallel}
If no tool is needed, answer normally. The results come back to you in the next message; \
never write them yourself."""


class Plamo:
    """PLaMo 3: marked requests of a name and JSON arguments."""

    name = "plamo"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ()
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = (THINK, END_THINK)

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tools as a JSON list, then the request syntax by example."""
        tools = json_text([t["function"] for t in catalog_tools(catalog)], TOKENS, indent=2)
        line = (
            "Put several requests in the section to use several tools at once."
            if parallel
            else "Put at most one request in the section."
        )
        example = self.render_calls([("tool_name", {"argument": "value"})])
        return _PROMPT.format(tools=tools, example=example, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One section holding a request per call."""
        requests = "".join(
            f"{REQUEST}{NAME}{name}{END_NAME}{ARGUMENTS}{JSON_MESSAGE}"
            f"{json_text(arguments, TOKENS)}{END_ARGUMENTS}{END_REQUEST}"
            for name, arguments in calls
        )
        return f"{REQUESTS}{requests}{END_REQUESTS}"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """Each result under its tool's name, in call order."""
        return "\n\n".join(
            f"Result of {name}:\n{neutralise_tokens(content, TOKENS)}" for name, content in results
        )

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser reading each request; the section's markers are dropped and the
        turn's end tag ends the answer."""
        inner = TaggedParser(
            specs,
            known_only(decode, specs),
            [Envelope(REQUEST, END_REQUEST, _scanner)],
            strict=strict,
            stops=(EOT,),
            drop=(REQUESTS, END_REQUESTS),
        )
        return ThinkingParser(inner, open=THINK, close=END_THINK)


def _scanner(lenient: bool) -> BodyScanner:
    # A new request outside strings means the model forgot to close the previous one.
    return QuotedScanner(END_REQUEST, ends=(REQUEST,) if lenient else ())


def decode(body: str, lenient: bool) -> Decoded | None:
    """The call of one request: its name and its JSON arguments (none: `{}`)."""
    match = _REQUEST.fullmatch(body)
    if match is None:
        return None
    for text, repairs in stripped_candidates(match.group(2), lenient):
        arguments = load_value(text, lenient, repairs) if text else {}
        if isinstance(arguments, dict):
            return [(match.group(1), arguments)], repairs
    return None
