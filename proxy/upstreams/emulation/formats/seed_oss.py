"""`seed-oss`: ByteDance Seed-OSS's Qwen3-Coder calls in `<seed:tool_call>`, reasoning in
`<seed:think>`.

    <seed:think>…</seed:think>
    <seed:tool_call>
    <function=get_weather>
    <parameter=city>Paris</parameter>
    </function>
    </seed:tool_call>

The function and parameter tags are Qwen3-Coder's (formats/xml.py reads them, values by the
tool's schema); only the wrapper, the reasoning block and the turn tokens (`<seed:bos>`,
`<seed:eos>`) are Seed's, and they are special tokens the server must keep. Seed 2 names them
as attributes in the same wrapper (`<function name="get_weather"><parameter name="city"
string="true">Paris</parameter></function>`): read too, its values by the schema as well.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded
from ..scanning import neutralise_tokens
from ..toolspecs import ToolSpecs
from .base import KEEP_SPECIAL_TOKENS, CallText, catalog_tools, response_blocks
from .xml import QWEN3_CODER, Tags, decode_functions, wrapped_envelopes

OPEN, CLOSE = "<seed:tool_call>", "</seed:tool_call>"
THINK = ("<seed:think>", "</seed:think>")
BOS, EOS = "<seed:bos>", "<seed:eos>"
TOKENS = (OPEN, CLOSE, *THINK, BOS, EOS)
SEED2 = Tags(function="<function name=", parameter="<parameter name=", lines=False)
_RESULT_TAGS = ("<tool_response>", "</tool_response>")
_PROMPT = """You may call one or more functions to assist with the user query.

Tool List:
You are authorized to use the following tools (described in JSON Schema format). Before \
performing any task, you must decide how to call them based on the descriptions and \
parameters of these tools.
{tools}

To call a function, reply in this format:
{open}
<function=example_function_name>
<parameter=example_parameter_1>value_1</parameter>
<parameter=example_parameter_2>This is the value for the second parameter
that can span
multiple lines</parameter>
</function>
{close}
{parallel}
Results come back in <tool_response> blocks; never write one yourself."""


class SeedOss:
    """Seed-OSS: Qwen3-Coder's tags in Seed's wrapper."""

    name = "seed-oss"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<tool_response>", BOS)
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """Seed-OSS's tool list: one indented JSON schema per tool, then the call syntax."""
        tools = "\n".join(
            json.dumps(tool["function"], ensure_ascii=False, indent=2)
            for tool in catalog_tools(catalog)
        )
        return _PROMPT.format(
            tools=neutralise_tokens(tools, (*TOKENS, *_RESULT_TAGS)),
            open=OPEN,
            close=CLOSE,
            parallel=f"You may write several {OPEN} blocks in one reply."
            if parallel
            else f"Write at most one {OPEN} block per reply.",
        )

    def render_calls(self, calls: list[CallText]) -> str:
        """One wrapper per call, around its function tag."""
        return "\n".join(
            f"{OPEN}\n{QWEN3_CODER.render(name, arguments)}\n{CLOSE}" for name, arguments in calls
        )

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order, Seed's markers broken."""
        return neutralise_tokens(response_blocks(results), TOKENS)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """Qwen3-Coder's reading inside Seed's wrapper, after a `<seed:think>` block."""

        def decode(body: str, lenient: bool) -> Decoded | None:
            tags = SEED2 if body.lstrip().startswith(SEED2.function) else QWEN3_CODER
            return decode_functions(body, lenient, specs, tags)

        inner = TaggedParser(
            specs,
            decode,
            wrapped_envelopes(OPEN, CLOSE, QWEN3_CODER),
            strict=strict,
            stops=self.stops,
            drop=(EOS, CLOSE),
        )
        return ThinkingParser(inner, open=THINK[0], close=THINK[1])
