"""`olmo3`: OLMo 3's calls, Python calls one per line inside `<function_calls>` tags
(`<function_calls>get_weather(city="SF")\nping()</function_calls>`), read as the `pythonic`
format reads a call list; JSON's `true`, `false` and `null` are read as values too.

The catalog is the template's `<functions>[…]</functions>` after a function-calling preamble;
results are plain text, the `environment` turn's content; reasoning is a leading `<think>` block
(the template opens it in the generation prompt).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded
from ..scanning import BodyScanner, QuotedScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from . import pythonic
from .base import THINK_TAGS, CallText, catalog_tools, escape_tokens

OPEN, CLOSE = "<function_calls>", "</function_calls>"
TOKENS = (OPEN, CLOSE, "<functions>", "</functions>", "<|im_start|>", "<|im_end|>")
_PROMPT = """You are a helpful function-calling AI assistant. \
<functions>{tools}</functions>

To call functions, write each call as Python on its own line inside \
<function_calls></function_calls> tags, with keyword arguments and literal values only:
<function_calls>function_name(argument="value", other=2)</function_calls>
{parallel}
If no function is needed, answer normally and do not write <function_calls>. Results come \
back to you as the environment's reply; never write them yourself."""


class Olmo3:
    """OLMo 3: Python calls on lines inside `<function_calls>`."""

    name = "olmo3"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ()
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The template's function list, then how to call."""
        functions = [t["function"] for t in catalog_tools(catalog)]
        tools = escape_tokens(json.dumps(functions, ensure_ascii=False), TOKENS)
        line = (
            "You may write several calls, one per line, in one block."
            if parallel
            else "Write at most one call per reply."
        )
        return _PROMPT.format(tools=tools, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One block, a call per line."""
        lines = "\n".join(pythonic.call_text(n, a) for n, a in calls)
        return f"{OPEN}{escape_tokens(lines, TOKENS)}{CLOSE}"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """The results' text, in call order."""
        return "\n\n".join(neutralise_tokens(content, TOKENS) for _, content in results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser reading the calls of `<function_calls>` blocks."""
        envelope = Envelope(OPEN, CLOSE, _scanner, finished=finished_calls)
        inner = TaggedParser(
            specs,
            pythonic.known_only(decode, specs),
            [envelope],
            strict=strict,
            stops=("<|im_start|>",),
        )
        return ThinkingParser(inner)


def _scanner(lenient: bool) -> BodyScanner:
    # A new opener outside strings means the model forgot to close the previous block.
    return QuotedScanner(CLOSE, ends=(OPEN,) if lenient else (), quotes="\"'")


def decode(body: str, lenient: bool) -> Decoded | None:
    """The calls on the body's lines (a call may span lines inside its brackets); a body
    written as a Python list is read as one."""
    if body.lstrip().startswith("["):
        return pythonic.decode(body, lenient)
    calls = [part for part in pythonic.top_level_parts(body, "\n") if part.strip()]
    return pythonic.decode("[" + ", ".join(calls) + "]", lenient) if calls else None


def finished_calls(body: str, lenient: bool) -> Decoded | None:
    """The calls on the lines a cut-off block finished (`Envelope.finished`)."""
    finished = pythonic.top_level_parts(body, "\n")[:-1]
    decoded = decode("\n".join(finished), lenient) if finished else None
    return decoded if decoded and decoded[0] else None
