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
"""

# The template's Chinese words keep their full-width punctuation.
# ruff: noqa: RUF001, RUF002
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Parser
from ..reasoning import ThinkingParser
from ..scanning import neutralise_tokens
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
from .jamba import CLOSE, OPEN

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
        """Jamba's list parser, with the answer tags and the role label dropped, after the
        leading `<think>` block."""
        inner = json_calls.list_parser(
            specs, OPEN, CLOSE, strict=strict, stops=self.stops, drop=(*ANSWER, LABEL)
        )
        return ThinkingParser(inner)
