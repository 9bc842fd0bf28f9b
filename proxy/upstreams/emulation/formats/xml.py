"""`xml`: Qwen3-Coder / OpenHands `<function=…><parameter=…>` calls inside `<tool_call>`.

Values are raw text (no JSON escaping, kind to small models writing code), converted to the
type the tool's schema gives the parameter.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, Repair, strip_tokens, unfence
from ..scanning import BodyScanner, XmlScanner
from ..toolspecs import ToolSpecs
from ..values import typed_arguments
from .base import THINK_TAGS, CallText, parallel_line, response_blocks

_PROMPT = """# Tools

You have access to the following functions:

<tools>
{catalog}
</tools>

If you choose to call a function ONLY reply in the following format with NO suffix:

<tool_call>
<function=example_function_name>
<parameter=example_parameter_1>
value_1
</parameter>
<parameter=example_parameter_2>
This is the value for the second parameter
that can span
multiple lines
</parameter>
</function>
</tool_call>

<IMPORTANT>
Reminder:
- Function calls MUST follow the specified format: an inner <function=...></function> block \
must be nested within <tool_call></tool_call> XML tags
- Required parameters MUST be specified
- {parallel}
- You may provide optional reasoning for your function call in natural language BEFORE the \
function call, but NOT after
- If there is no function call available, answer the question like normal with your current \
knowledge and do not tell the user about function calls
- Never write <tool_response> yourself; results will be provided to you
</IMPORTANT>"""


class Xml:
    """Parameters as raw text between tags, converted by schema."""

    name = "xml"
    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<tool_response>",)
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = THINK_TAGS

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The Qwen3-Coder tool block."""
        return _PROMPT.format(catalog=catalog, parallel=parallel_line(parallel, "<tool_call>"))

    def render_calls(self, calls: list[CallText]) -> str:
        """One `<tool_call>` block per call; non-string values as JSON."""
        blocks = []
        for name, arguments in calls:
            params = arguments if isinstance(arguments, dict) else {"arguments": arguments}
            inner = "".join(
                f"<parameter={key}>\n{_text(value)}\n</parameter>\n"
                for key, value in params.items()
            )
            blocks.append(f"<tool_call>\n<function={name}>\n{inner}</function>\n</tool_call>")
        return "\n".join(blocks)

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order."""
        return response_blocks(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser; lenient also takes a `<function=…>` block with no `<tool_call>`."""

        def decode(body: str, lenient: bool) -> Decoded | None:
            return _decode(body, lenient, specs)

        envelopes = [
            Envelope("<tool_call>", "</tool_call>", _scanner("</tool_call>")),
            Envelope(
                "<function=",
                "</function>",
                _scanner("</function>"),
                keep_markers=True,
                repair=Repair.MISSING_WRAPPER,
            ),
        ]
        # A bare `<function=…>` block may still end with the wrapper's close: it carries nothing.
        inner = TaggedParser(specs, decode, envelopes, strict=strict, drop=("</tool_call>",))
        return ThinkingParser(inner)


def _scanner(close: str) -> Any:
    def build(lenient: bool) -> BodyScanner:
        return XmlScanner(close)

    return build


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _decode(body: str, lenient: bool, specs: ToolSpecs) -> Decoded | None:
    repairs: list[Repair] = []
    text = unfence(strip_tokens(body.strip(), lenient, repairs).strip(), lenient, repairs)
    functions = _functions(text, lenient, repairs)
    if not functions:
        return None
    calls = [
        (name, typed_arguments(raw, specs.parameters(name), lenient, repairs))
        for name, raw in functions
    ]
    return calls, repairs


def _functions(
    text: str, lenient: bool, repairs: list[Repair]
) -> list[tuple[str, dict[str, str]]] | None:
    """(name, raw parameter values) of each `<function=…>` block; None if malformed."""
    calls: list[tuple[str, dict[str, str]]] = []
    pos = 0
    while (pos := _skip_space(text, pos)) < len(text):
        if not text.startswith("<function=", pos):
            if not (lenient and calls):
                return None
            repairs.append(Repair.TRAILING_PROSE)
            break
        end = text.find(">", pos)
        if end < 0:
            return None
        name = text[pos + len("<function=") : end].strip()
        params: dict[str, str] = {}
        pos = _parameters(text, end + 1, params, lenient, repairs)
        if pos < 0 or not name:
            return None
        calls.append((name, params))
    return calls


def _parameters(
    text: str, pos: int, params: dict[str, str], lenient: bool, repairs: list[Repair]
) -> int:
    """Read parameters up to `</function>`; the position after it, or -1 if malformed."""
    while True:
        pos = _skip_space(text, pos)
        if text.startswith("</function>", pos):
            return pos + len("</function>")
        if pos >= len(text):
            if not lenient:
                return -1
            repairs.append(Repair.MISSING_CLOSE_TAG)
            return pos
        if not text.startswith("<parameter=", pos):
            return -1
        end = text.find(">", pos)
        if end < 0:
            return -1
        key = text[pos + len("<parameter=") : end].strip()
        close = text.find("</parameter>", end + 1)
        following = text.find("<parameter=", end + 1) if lenient else -1
        if 0 <= following < close:
            close = -1  # the next parameter opens first: this one was never closed
        if close < 0:
            if not lenient:
                return -1
            repairs.append(Repair.MISSING_CLOSE_TAG)
            nexts = (text.find("<parameter=", end), text.find("</function>", end))
            close = min([i for i in nexts if i >= 0], default=len(text))
            after = close
        else:
            after = close + len("</parameter>")
        if not key or key in params:
            return -1
        params[key] = _trim(text[end + 1 : close])
        pos = after


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _trim(value: str) -> str:
    """Drop exactly one newline on each side: the ones the format puts around a value."""
    value = value[1:] if value.startswith("\n") else value
    return value[:-1] if value.endswith("\n") else value
