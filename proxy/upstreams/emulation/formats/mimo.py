"""`mimo`: Xiaomi MiMo's calls, Qwen3-Coder's tags with values written inline.

    <tool_call>
    <function=get_weather>
    <parameter=city>Paris</parameter>
    </function>
    </tool_call>

A value is kept exactly as written between its tags (no newline is the layout's, unlike
Qwen3-Coder's), then converted by the tool's schema; reasoning is a leading `<think>` block.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Parser
from ..toolspecs import ToolSpecs
from .base import THINK_TAGS, CallText, parallel_line, response_blocks
from .xml import Tags, tool_call_parser

INLINE = Tags(lines=False)
_PROMPT = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{catalog}
</tools>

For each function call, output the function name and arguments within <tool_call></tool_call> \
XML tags, in this format:
<tool_call>
<function=example_function_name>
<parameter=example_parameter_1>value_1</parameter>
<parameter=example_parameter_2>This is the value for the second parameter
that can span
multiple lines</parameter>
</function>
</tool_call>
{parallel}
Write each value as it is, with no quotes or escaping; lists and objects as JSON.
Never write <tool_response> yourself; results will be provided to you."""


class Mimo:
    """MiMo: Qwen3-Coder's tags, values inline and verbatim."""

    name = "mimo"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<tool_response>",)
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """MiMo's tool block."""
        return _PROMPT.format(catalog=catalog, parallel=parallel_line(parallel, "<tool_call>"))

    def render_calls(self, calls: list[CallText]) -> str:
        """One `<tool_call>` block per call, values inline."""
        return "\n".join(
            f"<tool_call>\n{INLINE.render(name, arguments)}\n</tool_call>"
            for name, arguments in calls
        )

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order."""
        return response_blocks(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """Qwen3-Coder's reading with values kept as written."""
        return tool_call_parser(specs, INLINE, strict=strict)
