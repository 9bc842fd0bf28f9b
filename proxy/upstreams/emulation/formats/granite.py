"""`granite`: every IBM Granite version's tool calls, read under the family's name.

    <|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]        3.0-3.3
    <tool_call> [{"name": "get_weather", "arguments": {"city": "Paris"}}]         3.1 (text)
    <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>  4.0
    <function_call> {"name": "get_weather", "arguments": {"city": "Paris"}}       20B FC
    <tool_call><function=get_weather><parameter=city>Paris</parameter>…            4.2

A list ends the call by itself (no closing marker), an object ends at `</tool_call>` (Granite
4) or with its own `}` (20B FC, one call per line); Granite 4.2 writes Qwen3-Coder's function
tags in `<tool_call>` (read by xml.py, values by the tool's schema). Prose may come before and
after. A list whose marker a server stripped (it drops special tokens) stays text. Granite
3.2/3.3 think in a leading `<think>` block and may put the answer in `<response>` tags, which
carry nothing. The names `granite4` and `granite-20b-fc` prompt and write those versions'
syntax; every name reads them all. A list cut off by the length limit runs the calls the
model completed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded
from ..scanning import BodyScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from .base import KEEP_SPECIAL_TOKENS, THINK_TAGS, CallText, catalog_tools, json_text
from .base import response_blocks as hermes_results
from .json_calls import Shape, decoder, finished, render_list
from .marked_json import ClosedValueScanner, json_or, render_blocks, value_envelope
from .pythonic import known_only
from .xml import QWEN3_CODER, decode_functions

TOOL_CALL, TAG_OPEN, TAG_CLOSE = "<|tool_call|>", "<tool_call>", "</tool_call>"
FUNCTION_CALL = "<function_call>"
ROLE = "<|start_of_role|>"
TOKENS = (TOOL_CALL, ROLE, "<|end_of_role|>", "<|end_of_text|>", FUNCTION_CALL)
_DROP = ("<response>", "</response>", TAG_CLOSE, "<|end_of_text|>")
_PROMPT = """You are a helpful AI assistant with access to the following tools. When a tool is \
required to answer the user's query, respond with {marker} followed by a JSON list of the tools \
used, each {{"name": <function-name>, "arguments": <args-json-object>}}. {parallel}If a tool \
does not exist in the provided list of tools, notify the user that you do not have the ability \
to fulfill the request.

Available tools:
{tools}"""
_PROMPT_4 = """You are a helpful assistant with access to the following tools. You may call one \
or more tools to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{catalog}
</tools>

For each tool call, return a json object with function name and arguments within \
<tool_call></tool_call> XML tags:
<tool_call>
{{"name": <function-name>, "arguments": <args-json-object>}}
</tool_call>
{parallel}If a tool does not exist in the provided list of tools, notify the user that you do \
not have the ability to fulfill the request. Never write <tool_response> yourself."""
_PROMPT_20B = """You are a helpful assistant with access to the following function calls. Your \
task is to produce a sequence of function calls necessary to generate response to the user \
utterance. Use the following function calls as required.
<|function_call_library|>
{tools}

Write each call on its own line as {marker} followed by one JSON object, \
{{"name": <function-name>, "arguments": <args-json-object>}}. {parallel}If no function is \
needed, answer normally."""
STOPS = (ROLE, "<tool_response>")
"""A role the model opens itself (a tool response it would write) ends the reply."""
_LIST, _OBJECT = decoder(Shape.LIST), decoder(Shape.OBJECT)


@dataclass(frozen=True, slots=True)
class _Version:
    """How one version is prompted and how its earlier calls and results are written."""

    prompt: Callable[[str, bool], str]
    calls: Callable[[list[CallText]], str]
    results: Callable[[list[tuple[str, str]]], str]


def _prompt_3(catalog: str, parallel: bool) -> str:
    tools = "\n\n".join(json_text(t, TOKENS, indent=4) for t in catalog_tools(catalog))
    line = "" if parallel else "Use at most one tool per reply. "
    return _PROMPT.format(marker=TOOL_CALL, parallel=line, tools=tools)


def _prompt_4(catalog: str, parallel: bool) -> str:
    line = "" if parallel else "Make at most one tool call per reply. "
    return _PROMPT_4.format(catalog=catalog, parallel=line)


def _prompt_20b(catalog: str, parallel: bool) -> str:
    tools = "\n".join(json_text(t["function"], TOKENS) for t in catalog_tools(catalog))
    line = "" if parallel else "Make at most one call per reply. "
    return _PROMPT_20B.format(marker=FUNCTION_CALL, parallel=line, tools=tools)


def _plain_results(results: list[tuple[str, str]]) -> str:
    return "\n\n".join(neutralise_tokens(content, TOKENS) for _, content in results)


_VERSIONS = {
    "granite": _Version(
        _prompt_3, lambda calls: TOOL_CALL + render_list(calls, TOKENS), _plain_results
    ),
    "granite4": _Version(
        _prompt_4, lambda calls: render_blocks(calls, TAG_OPEN, TAG_CLOSE, TOKENS), hermes_results
    ),
    "granite-20b-fc": _Version(
        _prompt_20b,
        lambda calls: render_blocks(calls, f"{FUNCTION_CALL} ", "", TOKENS, inner=""),
        _plain_results,
    ),
}
"""Granite 3.x: one `<|tool_call|>` list per reply, results as plain text; Granite 4: a
`<tool_call>` block per call, results in `<tool_response>` blocks; 20B FC: a `<function_call>`
line per call."""


class Granite:
    """One Granite version's prompt and history; the parser reads every version."""

    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = STOPS
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS

    def __init__(self, name: str = "granite") -> None:
        """`name`: `granite` (3.x), `granite4` or `granite-20b-fc`.

        Raises:
            KeyError: no Granite version has that name.
        """
        self._version = _VERSIONS[name]
        self.name = name

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The version's tool instruction and tool list."""
        return self._version.prompt(catalog, parallel)

    def render_calls(self, calls: list[CallText]) -> str:
        """Earlier calls in the version's syntax."""
        return self._version.calls(calls)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """Results as the version's template gives them back, in call order."""
        return self._version.results(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """The family's parser: every version's syntax."""
        return family_parser(specs, strict=strict)


def family_parser(specs: ToolSpecs, *, strict: bool) -> Parser:
    """Every version's envelopes: lists after `<|tool_call|>` or `<tool_call>`, objects or
    4.2's function tags in `<tool_call>` tags, objects after `<function_call>`; a leading
    `<think>` block is reasoning."""

    def decode(body: str, lenient: bool) -> Decoded | None:
        text = body.lstrip()
        if text.startswith(QWEN3_CODER.function):
            return decode_functions(body, lenient, specs, QWEN3_CODER)
        return (_LIST if text.startswith("[") else _OBJECT)(body, lenient)

    cut = known_only(finished(), specs)
    envelopes: list[Envelope] = [
        value_envelope(TOOL_CALL, finished=cut),
        Envelope(TAG_OPEN, TAG_CLOSE, _tag_scanner, finished=cut),
        value_envelope(FUNCTION_CALL),
    ]
    inner = TaggedParser(
        specs, known_only(decode, specs), envelopes, strict=strict, stops=STOPS, drop=_DROP
    )
    return ThinkingParser(inner)


def _tag_scanner(lenient: bool) -> BodyScanner:
    functions = QWEN3_CODER.scanner(TAG_CLOSE, ends=(TAG_OPEN,))(lenient)
    return json_or(ClosedValueScanner(TAG_CLOSE, lenient=lenient), functions)
