"""`hermes`: one JSON object per call inside `<tool_call>` tags (Hermes 2/3, Qwen 2.5/3)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, calls_from_json, stripped_candidates, unfence
from ..scanning import BodyScanner, QuotedScanner
from ..toolspecs import ToolSpecs
from .base import THINK_TAGS, CallText, parallel_line, response_blocks

_PROMPT = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{catalog}
</tools>

For each function call, return a json object with function name and arguments within \
<tool_call></tool_call> XML tags:
<tool_call>
{{"name": <function-name>, "arguments": <args-json-object>}}
</tool_call>
{parallel}
If no function is needed, answer normally and do not write <tool_call>.
Never write <tool_response> yourself; results will be provided to you."""


class Hermes:
    """The default format: the most widely trained one."""

    name = "hermes"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<tool_response>",)
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The Qwen-Agent / Hermes tool block."""
        return _PROMPT.format(catalog=catalog, parallel=parallel_line(parallel, "<tool_call>"))

    def render_calls(self, calls: list[CallText]) -> str:
        """`<tool_call>` blocks, one per call."""
        return "\n".join(
            "<tool_call>\n"
            + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
            + "\n</tool_call>"
            for name, arguments in calls
        )

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order."""
        return response_blocks(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser reading JSON bodies."""
        return ThinkingParser(tagged(specs, strict=strict))


def tagged(specs: ToolSpecs, *, strict: bool) -> TaggedParser:
    """A parser of `<tool_call>` JSON blocks and the text around them."""
    return TaggedParser(
        specs, decode, [Envelope("<tool_call>", "</tool_call>", _scanner)], strict=strict
    )


def _scanner(lenient: bool) -> BodyScanner:
    # A new <tool_call> outside strings means the model forgot to close the previous one.
    return QuotedScanner("</tool_call>", ends=("<tool_call>",) if lenient else ())


def decode(body: str, lenient: bool) -> Decoded | None:
    """Calls from a `<tool_call>` body (as written, then without leaked special tokens, so a
    token quoted inside an argument string survives); None if it is not a valid call."""
    for text, repairs in stripped_candidates(body, lenient):
        calls = calls_from_json(unfence(text, lenient, repairs), lenient, repairs)
        if calls is not None:
            return calls, repairs
    return None
