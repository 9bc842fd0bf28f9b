"""`step`: StepFun's tool calls. The family's name reads every version's syntax: Step-3.5 and
Step-5 write Qwen3-Coder's (formats/xml.py), Step-3 its StepTML invokes between special tokens:

    <|tool_calls_begin|><|tool_call_begin|>function<|tool_sep|>
    <steptml:invoke name="get_weather"><steptml:parameter name="city">Paris</steptml:parameter>
    </steptml:invoke><|tool_call_end|><|tool_calls_end|>

(on one line; the bars are U+FF5C, written here in ASCII). The `function<|tool_sep|>` head
is optional, and a `<|tool_sep|>` may stand between two calls. Step-3's values are inline and
kept as written. `step` prompts in Step-3.5's syntax, `step3` in Step-3's; both parse every
version. Reasoning is a leading `<think>` block, which Step-3.5's template opens itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded
from ..scanning import neutralise_tokens
from ..toolspecs import ToolSpecs
from .base import (
    KEEP_SPECIAL_TOKENS,
    THINK_TAGS,
    CallText,
    catalog_tools,
    json_text,
    response_blocks,
)
from .xml import QWEN3_CODER, Tags, Xml, decode_functions, wrapped_envelopes

CALLS_BEGIN, CALLS_END = "<\uff5ctool_calls_begin\uff5c>", "<\uff5ctool_calls_end\uff5c>"
CALL_BEGIN, CALL_END = "<\uff5ctool_call_begin\uff5c>", "<\uff5ctool_call_end\uff5c>"
SEP = "<\uff5ctool_sep\uff5c>"
HEAD = f"function{SEP}"
STEPTML = Tags(
    function="<steptml:invoke name=",
    function_end="</steptml:invoke>",
    parameter="<steptml:parameter name=",
    parameter_end="</steptml:parameter>",
    lines=False,
)
TOKENS = (CALLS_BEGIN, CALLS_END, CALL_BEGIN, CALL_END, SEP)
_QWEN = Xml()
_STEP3_PROMPT = """# Tools

You can call the following tools, described as JSON schemas:
<tools>
{tools}
</tools>

To call tools, write them in one block:
{calls_begin}{call_begin}{head}<steptml:invoke name="TOOL_NAME">\
<steptml:parameter name="PARAMETER_NAME">VALUE</steptml:parameter></steptml:invoke>{call_end}\
{calls_end}
Write each value as it is, with no quotes or escaping; lists and objects as JSON.
{parallel}
Results come back in <tool_response> blocks; never write one yourself."""


class Step:
    """Step-3.5 and Step-5: Qwen3-Coder's syntax; reads Step-3's too."""

    name = "step"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<tool_response>",)
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """Qwen3-Coder's tool block, which Step-3.5's template writes."""
        return _QWEN.system_prompt(catalog, parallel=parallel)

    def render_calls(self, calls: list[CallText]) -> str:
        """One `<tool_call>` block per call, values on lines of their own."""
        return _QWEN.render_calls(calls)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order."""
        return response_blocks(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """Every version's calls."""
        return step_parser(specs, strict=strict)


class Step3:
    """Step-3: StepTML invokes between special tokens."""

    name = "step3"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<tool_response>",)
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """Step-3's tool block: the schemas, then the call syntax."""
        tools = "\n".join(
            json_text(tool["function"], TOKENS, sort_keys=True) for tool in catalog_tools(catalog)
        )
        return _STEP3_PROMPT.format(
            tools=neutralise_tokens(tools, TOKENS),
            calls_begin=CALLS_BEGIN,
            call_begin=CALL_BEGIN,
            head=HEAD,
            call_end=CALL_END,
            calls_end=CALLS_END,
            parallel="You may call several tools in the block, one call each."
            if parallel
            else "Call at most one tool per reply.",
        )

    def render_calls(self, calls: list[CallText]) -> str:
        """One block, each call between its begin and end tokens."""
        inner = "".join(
            f"{CALL_BEGIN}{HEAD}{STEPTML.render(name, arguments)}{CALL_END}"
            for name, arguments in calls
        )
        return f"{CALLS_BEGIN}{inner}{CALLS_END}"

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order, Step's tokens broken."""
        return neutralise_tokens(response_blocks(results), TOKENS)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """Every version's calls."""
        return step_parser(specs, strict=strict)


def step_parser(specs: ToolSpecs, *, strict: bool) -> Parser:
    """Qwen3-Coder's `<tool_call>` blocks and Step-3's calls, after a `<think>` block."""

    def decode(body: str, lenient: bool) -> Decoded | None:
        text = body.strip()
        if text.startswith(HEAD):
            text = text[len(HEAD) :]
        tags = STEPTML if text.lstrip().startswith(STEPTML.function) else QWEN3_CODER
        return decode_functions(text, lenient, specs, tags)

    envelopes = [
        *wrapped_envelopes("<tool_call>", "</tool_call>", QWEN3_CODER),
        Envelope(CALL_BEGIN, CALL_END, STEPTML.scanner(CALL_END, ends=(CALL_BEGIN, CALLS_END))),
    ]
    drop = (CALLS_BEGIN, CALLS_END, SEP, "</tool_call>")
    inner = TaggedParser(specs, decode, envelopes, strict=strict, drop=drop)
    return ThinkingParser(inner)
