"""`kimi`: every Kimi version's tool calls (K2, K2.5, K3).

    <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0
    <|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>

(on one line). Each call's id is `functions.NAME:INDEX`; results go back as
`## Return of ID` followed by the content, as K2's template writes a tool message. The tools
are declared as a JSON array. Reasoning (K2-Thinking) is a leading `<think>` block. The
markers are special tokens: the server must keep them. K2.5 writes the same. K3 writes its
XTML channels (formats/kimi_k3.py), read here too: users name the family, not the model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..call_ids import kimi_ids, random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, Repair, load_value, stripped_candidates
from ..scanning import BodyScanner, QuotedScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from . import kimi_k3
from .base import KEEP_SPECIAL_TOKENS, THINK_TAGS, CallText, catalog_tools, json_text

SECTION_BEGIN, SECTION_END = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
CALL_BEGIN, CALL_END = "<|tool_call_begin|>", "<|tool_call_end|>"
ARGUMENT_BEGIN = "<|tool_call_argument_begin|>"
TOKENS = (SECTION_BEGIN, SECTION_END, CALL_BEGIN, CALL_END, ARGUMENT_BEGIN, "<|im_end|>")
_PROMPT = """# Tools

The following tools are available, as JSON function signatures:
{tools}

To call tools, write them in one section, each with an id made of its name and its \
index in this reply:
{section_begin}{call_begin}functions.get_weather:0{argument_begin}{{"city": "Paris"}}\
{call_end}{section_end}
{parallel}
If no tool is needed, answer normally. Results come back as "## Return of" the call's id; \
never write them yourself."""
_ID = re.compile(r"\s*(?:functions\.)?([^\s:<]+)(?::\d+)?\s*")


class Kimi:
    """Kimi K2: calls in a section of special tokens."""

    name = "kimi"
    call_ids = staticmethod(kimi_ids)
    stops: tuple[str, ...] = ()
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS
    think_tags_also: tuple[tuple[str, str], ...] = ((kimi_k3.THINK_OPEN, kimi_k3.THINK_CLOSE),)
    """K3's think channel, which its template opens itself when thinking is on: a reply that
    begins inside the block ends it with either family's close."""

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tools as a JSON array, then the call syntax."""
        line = (
            "You may put several calls in the section."
            if parallel
            else "Put at most one call in the section."
        )
        return _PROMPT.format(
            tools=json_text(catalog_tools(catalog), TOKENS),
            section_begin=SECTION_BEGIN,
            section_end=SECTION_END,
            call_begin=CALL_BEGIN,
            call_end=CALL_END,
            argument_begin=ARGUMENT_BEGIN,
            parallel=line,
        )

    def render_calls(self, calls: list[CallText]) -> str:
        """One section holding every call, numbered from 0."""
        inner = "".join(
            f"{CALL_BEGIN}functions.{name}:{i}{ARGUMENT_BEGIN}{json_text(arguments, TOKENS)}"
            f"{CALL_END}"
            for i, (name, arguments) in enumerate(calls)
        )
        return f"{SECTION_BEGIN}{inner}{SECTION_END}"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`## Return of functions.NAME:INDEX` then the content, per result."""
        return "\n\n".join(
            f"## Return of functions.{name}:{i}\n{neutralise_tokens(content, TOKENS)}"
            for i, (name, content) in enumerate(results)
        )

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser per call (K2's or K3's); the section and channel markers around
        them carry nothing. Reasoning: K2's `<think>` block or K3's `think` channel."""
        envelopes = [
            Envelope(CALL_BEGIN, CALL_END, _scanner),
            Envelope(kimi_k3.CALL_OPEN, kimi_k3.CALL_CLOSE, kimi_k3.scanner),
        ]

        def decode_any(body: str, lenient: bool) -> Decoded | None:
            if kimi_k3.is_k3(body):
                return kimi_k3.decode(body, lenient, specs)
            return decode(body, lenient)

        inner = TaggedParser(
            specs,
            decode_any,
            envelopes,
            strict=strict,
            stops=("## Return of",),
            drop=kimi_k3.DROP,
            sections=((SECTION_BEGIN, SECTION_END),),
        )
        return ThinkingParser(kimi_k3.WholeMarkers(inner), also=self.think_tags_also)


def _scanner(lenient: bool) -> BodyScanner:
    # A new call or the section's end outside strings: the model forgot <|tool_call_end|>.
    return QuotedScanner(CALL_END, ends=(CALL_BEGIN, SECTION_END) if lenient else ())


def decode(body: str, lenient: bool) -> Decoded | None:
    """`functions.NAME:INDEX<|tool_call_argument_begin|>{…}`."""
    for text, repairs in stripped_candidates(body, lenient):
        decoded = _decode(text, lenient, repairs)
        if decoded is not None:
            return decoded
    return None


def _decode(text: str, lenient: bool, repairs: list[Repair]) -> Decoded | None:
    head, found, arguments = text.partition(ARGUMENT_BEGIN)
    match = _ID.fullmatch(head)
    if not found or match is None:
        return None
    if not lenient and not head.strip().startswith("functions."):
        return None
    value = load_value(arguments, lenient, repairs) if arguments.strip() else {}
    if not isinstance(value, dict):
        return None
    return [(match.group(1), value)], repairs


_K3_PROMPT = """# Tools

The following tools are available, as JSON function signatures:
{tools}

To call tools, write them in the tools channel, one call per tool with its index in this \
reply, one argument per parameter with its JSON type (string values as they are, other types \
as JSON):
{example}
{parallel}
If no tool is needed, answer normally. Results come back as "## Return of" the tool's name; \
never write them yourself."""


class KimiK3(Kimi):
    """Kimi K3's own prompt and history: calls in XTML's tools channel (`kimi-k3`); read by the
    family's parser."""

    name = "kimi-k3"
    call_ids = staticmethod(random_ids)

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The tools as a JSON array, then the tools channel's syntax."""
        example = self.render_calls([("get_weather", {"city": "Paris", "days": 2})])
        line = (
            "You may write several calls in the channel." if parallel else "Write at most one call."
        )
        tools = json_text(catalog_tools(catalog), kimi_k3.TOKENS)
        return _K3_PROMPT.format(tools=tools, example=example, parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One tools channel holding every call, numbered from 1."""
        inner = "".join(
            kimi_k3.render_call(name, arguments, i) for i, (name, arguments) in enumerate(calls, 1)
        )
        return f"{kimi_k3.TOOLS_OPEN}{inner}{kimi_k3.TOOLS_CLOSE}"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`## Return of NAME` then the content, per result."""
        return "\n\n".join(
            f"## Return of {name}\n{neutralise_tokens(content, kimi_k3.TOKENS)}"
            for name, content in results
        )
