"""`glm`: GLM-4.5/4.6's `<tool_call>name` with `<arg_key>`/`<arg_value>` pairs.

Values are raw text: strings as written, other types as JSON (the template's `tojson` for
non-strings), read back by the tool's schema like the `xml` format's. A value may hold any
text, `</tool_call>` included: the block ends only outside `<arg_value>…</arg_value>`. The
catalog and the results are Hermes-style (`<tools>`, `<tool_response>`), as GLM's template
writes them; reasoning is a leading `<think>` block.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, Repair, strip_tokens
from ..scanning import BodyScanner, XmlScanner
from ..toolspecs import ToolSpecs
from ..values import typed_arguments
from .base import KEEP_SPECIAL_TOKENS, THINK_TAGS, CallText, parallel_line, response_blocks

_PROMPT = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{catalog}
</tools>

For each function call, output the function name and arguments within the following XML \
format:
<tool_call>{{function-name}}
<arg_key>{{arg-key-1}}</arg_key>
<arg_value>{{arg-value-1}}</arg_value>
<arg_key>{{arg-key-2}}</arg_key>
<arg_value>{{arg-value-2}}</arg_value>
...
</tool_call>
{parallel}
If no function is needed, answer normally and do not write <tool_call>.
Never write <tool_response> yourself; results will be provided to you."""
_PAIR = re.compile(r"\s*<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)
_NAME = re.compile(r"\s*([^\s<]+)")
_VALUE = ("<arg_value>", "</arg_value>")


class Glm:
    """GLM-4.5/4.6: key/value tags, values raw."""

    name = "glm"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<tool_response>", "<|observation|>")
    request_fields: Mapping[str, Any] = KEEP_SPECIAL_TOKENS
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """GLM's tool block."""
        return _PROMPT.format(catalog=catalog, parallel=parallel_line(parallel, "<tool_call>"))

    def render_calls(self, calls: list[CallText]) -> str:
        """One `<tool_call>` block per call, pairs one per line."""
        blocks = []
        for name, arguments in calls:
            params = arguments if isinstance(arguments, dict) else {"arguments": arguments}
            pairs = "".join(
                f"<arg_key>{key}</arg_key>\n<arg_value>{_text(value)}</arg_value>\n"
                for key, value in params.items()
            )
            blocks.append(f"<tool_call>{name}\n{pairs}</tool_call>")
        return "\n".join(blocks)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order."""
        return response_blocks(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser reading key/value pairs, converted by the tool's schema."""

        def decode(body: str, lenient: bool) -> Decoded | None:
            return _decode(body, lenient, specs)

        envelope = Envelope("<tool_call>", "</tool_call>", _scanner)
        return ThinkingParser(
            TaggedParser(specs, decode, [envelope], strict=strict, stops=self.stops)
        )


def _scanner(lenient: bool) -> BodyScanner:
    # A new <tool_call> outside values means the model forgot to close the previous one.
    return XmlScanner("</tool_call>", ends=("<tool_call>",) if lenient else (), value=_VALUE)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _decode(body: str, lenient: bool, specs: ToolSpecs) -> Decoded | None:
    repairs: list[Repair] = []
    text = strip_tokens(body, lenient, repairs) if "<arg_value>" not in body else body
    name = _NAME.match(text)
    if name is None:
        return None
    arguments: dict[str, str] = {}
    pos = name.end()
    for pair in _PAIR.finditer(text, pos):
        if pair.start() != pos:
            return None
        key = pair.group(1).strip()
        if not key or key in arguments:
            return None
        arguments[key] = pair.group(2)
        pos = pair.end()
    if text[pos:].strip():
        return None
    parameters = specs.parameters(name.group(1))
    return [(name.group(1), typed_arguments(arguments, parameters, lenient, repairs))], repairs
