"""`hunyuan`: Tencent Hunyuan-A13B's tool calls, Jamba's syntax inside its answer block.

    <think>
    The user wants the weather.
    </think>
    <answer>
    <tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>
    </answer>

A reply opens with a `<think>` block (empty in its fast mode), then `<answer>…</answer>`
holds either one `<tool_calls>` JSON list or prose the template has start with the role label
`助手：`; the answer tags and the label carry nothing and are dropped. The template puts its
instructions in Chinese with the tools as one JSON array, and gives results back in
`<tool_response>` blocks.

Tencent's later HY v3 and v4 (`hy`) write GLM-style pairs in the same `<tool_calls>` section
(`<tool_call>name<tool_sep><arg_key>…</arg_key><arg_value>…</arg_value></tool_call>`, SGLang's
hunyuan detector): read too, by hy.py's syntax, the section's body told apart by its first
character (`[` or `<`).
"""

# The template's Chinese words keep their full-width punctuation.
# ruff: noqa: RUF001, RUF002
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, Repair
from ..scanning import BodyScanner, QuotedScanner, XmlScanner, neutralise_tokens
from ..toolspecs import ToolSpecs
from . import json_calls
from .base import (
    KEEP_SPECIAL_TOKENS,
    THINK_TAGS,
    CallText,
    catalog_tools,
    json_text,
    response_blocks,
)
from .hy import HY_V3, unsuffixed
from .jamba import CLOSE, OPEN
from .pythonic import known_only

ANSWER = ("<answer>", "</answer>")
LABEL = "助手："
TOKENS = (OPEN, CLOSE, "<tool_response>", "</tool_response>", *ANSWER, "<|eos|>", "<|extra_0|>")
_SYNTAX = '<tool_calls>[{{"name": "func_name1", "arguments": {{"argument1": "value1", \
"argument2": "value2"}}}},...]</tool_calls>'
_PROMPT = (
    "你是一位函数组合专家。你会得到一个问题和一组可能的函数。根据问题，你需要进行一个或多个"
    "函数/工具调用以实现目的。\n"
    "如果没有一个函数可以使用，请直接使用自然语言回复用户，以助手：开头。\n"
    "如果给定的问题缺少函数所需的参数，请使用自然语言进行提问，向用户询问必要信息，以助手：开头。\n"
    "如果调用结果已经足够回答用户问题，请对历史结果进行总结，使用自然语言回复用户，以助手：开头。\n"
    "你应该只在工具调用部分返回函数调用。如果你决定调用任何函数，你必须将其格式化为"
    f"{_SYNTAX}。你不应该在回复中包含任何其他文本。以下是你可以调用的函数列表，格式为JSON。\n\n"
    "{tools}\n\n"
    f"如果你决定返回函数调用，请将其格式化为{_SYNTAX}，不得包含其他文本。{{parallel}}\n"
    "否则，请参考开头说的三种情况，以助手：开头进行回复。"
)


class Hunyuan:
    """Hunyuan-A13B: `<tool_calls>` JSON lists in `<answer>` blocks."""

    name = "hunyuan"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<tool_response>",)
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The template's Chinese instructions around the tools as one JSON array."""
        line = "你可以在列表中放入多个调用。" if parallel else "每次回复最多调用一个函数。"
        return _PROMPT.format(tools=json_text(catalog_tools(catalog), TOKENS), parallel=line)

    def render_calls(self, calls: list[CallText]) -> str:
        """One `<tool_calls>` list holding every call, as the template renders history."""
        return OPEN + json_calls.render_list(calls, TOKENS) + CLOSE

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order."""
        return response_blocks([(n, neutralise_tokens(c, TOKENS)) for n, c in results])

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser of `<tool_calls>` sections (A13B's JSON list or HY's pair calls),
        the answer tags and the role label dropped, after the leading `<think>` block; HY's
        token suffixes taken off first."""

        def decode(body: str, lenient: bool) -> Decoded | None:
            if body.lstrip().startswith(CALL[0]):
                return _pair_calls(body, lenient, specs, finished=False)
            return _LIST(body, lenient)

        def finished(body: str, lenient: bool) -> Decoded | None:
            if body.lstrip().startswith(CALL[0]):
                return _pair_calls(body, lenient, specs, finished=True)
            return _FINISHED(body, lenient)

        envelope = Envelope(OPEN, CLOSE, _Section, finished=known_only(finished, specs))
        inner = TaggedParser(
            specs,
            known_only(decode, specs),
            [envelope],
            strict=strict,
            stops=self.stops,
            drop=(*ANSWER, LABEL),
        )
        return unsuffixed(ThinkingParser(inner))


_LIST = json_calls.decoder(json_calls.Shape.LIST)
_FINISHED = json_calls.finished()
CALL = HY_V3.call


class _Section:
    """After `<tool_calls>`: ends at its close outside JSON strings (A13B's list) or outside
    `<arg_value>` values (HY's raw values), whichever the body opens with."""

    def __init__(self, lenient: bool) -> None:
        self._ends = (OPEN,) if lenient else ()
        self._chosen: BodyScanner | None = None

    def scan(self, buf: str) -> tuple[int, str] | None:
        """The section's end; None while it goes on."""
        if self._chosen is None:
            rest = buf.lstrip()
            if not rest:
                return None
            self._chosen = (
                XmlScanner(CLOSE, ends=self._ends, value=HY_V3.value)
                if rest[0] == "<"
                else QuotedScanner(CLOSE, ends=self._ends)
            )
        return self._chosen.scan(buf)


def _pair_calls(body: str, lenient: bool, specs: ToolSpecs, *, finished: bool) -> Decoded | None:
    """HY's `<tool_call>` blocks in a section, each read by hy.py's syntax; `finished`: the
    section was cut off, and only the blocks the model went on from count."""
    calls: list[tuple[str, Any]] = []
    repairs: list[Repair] = []
    rest = body.lstrip()
    while rest.startswith(CALL[0]):
        found = XmlScanner(CALL[1], value=HY_V3.value).scan(rest[len(CALL[0]) :])
        if found is None:
            break
        end = len(CALL[0]) + found[0]
        decoded = HY_V3.decode(rest[len(CALL[0]) : end], lenient, specs)
        after = rest[end + len(CALL[1]) :].lstrip()
        if finished and not after.startswith(CALL[0]):
            break
        if decoded is None:
            return None
        calls += decoded[0]
        repairs += decoded[1]
        rest = after
    if finished:
        return (calls, repairs) if calls else None
    return (calls, repairs) if calls and not rest.strip() else None
