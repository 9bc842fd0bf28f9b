"""`xml`: Qwen3-Coder / OpenHands `<function=…><parameter=…>` calls inside `<tool_call>`.

Values are raw text (no JSON escaping, kind to small models writing code), converted to the
type the tool's schema gives the parameter. The same reading serves every family that writes
a function tag holding parameter tags (`Tags`: Seed-OSS, MiMo, Step, MiniMax M2's
`<invoke name="…"><parameter name="…">`, MiniCPM's `<function name="…"><param name="…">`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..call_ids import random_ids
from ..parser import Envelope, Parser, TaggedParser
from ..reasoning import ThinkingParser
from ..repairs import Decoded, Repair, strip_tokens, unfence
from ..scanning import BodyScanner, XmlScanner
from ..toolspecs import ToolSpecs
from ..values import typed_arguments
from .base import THINK_TAGS, CallText, parallel_line, response_blocks


@dataclass(frozen=True, slots=True)
class Tags:
    """The markers of one syntax of a function tag holding parameter tags. An opener's name runs
    to its `>` (`<function=NAME>`, or quoted as an attribute: `<invoke name="NAME">`)."""

    function: str = "<function="
    function_end: str = "</function>"
    parameter: str = "<parameter="
    parameter_end: str = "</parameter>"
    lines: bool = True
    """Values stand on lines of their own (Qwen3-Coder): the newline on each side is the
    layout's, not the value's. Otherwise values are inline and kept as written."""
    cdata: bool = False
    """A value may be wrapped in `<![CDATA[…]]>` (MiniCPM)."""

    def opener(self, marker: str, name: str) -> str:
        """`marker` with `name`, quoted where the marker is an attribute (`name=`)."""
        return f'{marker}"{name}">' if marker.endswith("name=") else f"{marker}{name}>"

    def render(self, name: str, arguments: Any) -> str:
        """One function tag, a parameter tag per argument, each on a line of its own;
        non-string values as JSON."""
        params = arguments if isinstance(arguments, dict) else {"arguments": arguments}
        gap = "\n" if self.lines else ""
        inner = "".join(
            f"{self.opener(self.parameter, key)}{gap}{_text(value)}{gap}{self.parameter_end}\n"
            for key, value in params.items()
        )
        return f"{self.opener(self.function, name)}\n{inner}{self.function_end}"

    def scanner(self, close: str, *, ends: tuple[str, ...] = ()) -> Callable[[bool], BodyScanner]:
        """Builds a scanner ending at `close` (lenient, also at `ends`) outside values."""
        value = (self.parameter, self.parameter_end)

        def build(lenient: bool) -> BodyScanner:
            return XmlScanner(close, ends=ends if lenient else (), value=value)

        return build


QWEN3_CODER = Tags()

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

    call_ids = staticmethod(random_ids)
    stops: tuple[str, ...] = ("<tool_response>",)
    request_fields: Mapping[str, Any] = {}
    think_tags: tuple[str, str] | None = THINK_TAGS

    def __init__(self, name: str = "xml", tags: Tags = QWEN3_CODER, prompt: str = _PROMPT) -> None:
        """`tags` and `prompt` (with `{catalog}` and `{parallel}`): a family that writes
        Qwen3-Coder's `<tool_call>` blocks its own way (MiMo's inline values)."""
        self.name, self._tags, self._prompt = name, tags, prompt

    def system_prompt(self, catalog: str, *, parallel: bool) -> str:
        """The Qwen3-Coder tool block."""
        return self._prompt.format(catalog=catalog, parallel=parallel_line(parallel, "<tool_call>"))

    def render_calls(self, calls: list[CallText]) -> str:
        """One `<tool_call>` block per call; non-string values as JSON."""
        return "\n".join(
            f"<tool_call>\n{self._tags.render(name, arguments)}\n</tool_call>"
            for name, arguments in calls
        )

    def render_results(self, results: list[tuple[str, str]]) -> str:
        """`<tool_response>` blocks in call order."""
        return response_blocks(results)

    def parser(self, specs: ToolSpecs, *, strict: bool) -> Parser:
        """A tagged parser; lenient also takes a function tag with no `<tool_call>`."""
        return tool_call_parser(specs, self._tags, strict=strict)


def tool_call_parser(specs: ToolSpecs, tags: Tags, *, strict: bool) -> Parser:
    """Function tags in `<tool_call>` (lenient, also bare), after a `<think>` block."""

    def decode(body: str, lenient: bool) -> Decoded | None:
        return decode_functions(body, lenient, specs, tags)

    envelopes = wrapped_envelopes("<tool_call>", "</tool_call>", tags)
    # A bare function tag may still end with the wrapper's close: it carries nothing.
    inner = TaggedParser(specs, decode, envelopes, strict=strict, drop=("</tool_call>",))
    return ThinkingParser(inner)


def wrapped_envelopes(open: str, close: str, tags: Tags) -> list[Envelope]:
    """Function tags inside `open`…`close`; lenient, also a function tag with no wrapper."""
    return [
        Envelope(open, close, tags.scanner(close)),
        Envelope(
            tags.function,
            tags.function_end,
            tags.scanner(tags.function_end),
            keep_markers=True,
            repair=Repair.MISSING_WRAPPER,
        ),
    ]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def decode_functions(body: str, lenient: bool, specs: ToolSpecs, tags: Tags) -> Decoded | None:
    """The calls of the function tags in `body`, values converted by each tool's schema; None
    if the body is anything else."""
    repairs: list[Repair] = []
    text = unfence(strip_tokens(body.strip(), lenient, repairs).strip(), lenient, repairs)
    functions = _functions(text, lenient, repairs, tags)
    if not functions:
        return None
    calls = [
        (name, typed_arguments(raw, specs.parameters(name), lenient, repairs))
        for name, raw in functions
    ]
    return calls, repairs


def _functions(
    text: str, lenient: bool, repairs: list[Repair], tags: Tags
) -> list[tuple[str, dict[str, str]]] | None:
    """(name, raw parameter values) of each function tag; None if malformed."""
    calls: list[tuple[str, dict[str, str]]] = []
    pos = 0
    while (pos := _skip_space(text, pos)) < len(text):
        if not text.startswith(tags.function, pos):
            if not (lenient and calls):
                return None
            repairs.append(Repair.TRAILING_PROSE)
            break
        end = text.find(">", pos)
        if end < 0:
            return None
        name = _name(text[pos + len(tags.function) : end])
        params: dict[str, str] = {}
        pos = _parameters(text, end + 1, params, lenient, repairs, tags)
        if pos < 0 or not name:
            return None
        calls.append((name, params))
    return calls


def _parameters(
    text: str, pos: int, params: dict[str, str], lenient: bool, repairs: list[Repair], tags: Tags
) -> int:
    """Read parameters up to the function's end; the position after it, or -1 if malformed."""
    while True:
        pos = _skip_space(text, pos)
        if text.startswith(tags.function_end, pos):
            return pos + len(tags.function_end)
        if pos >= len(text):
            if not lenient:
                return -1
            repairs.append(Repair.MISSING_CLOSE_TAG)
            return pos
        if not text.startswith(tags.parameter, pos):
            return -1
        end = text.find(">", pos)
        if end < 0:
            return -1
        key = _name(text[pos + len(tags.parameter) : end])
        close = text.find(tags.parameter_end, end + 1)
        following = text.find(tags.parameter, end + 1) if lenient else -1
        if 0 <= following < close:
            close = -1  # the next parameter opens first: this one was never closed
        if close < 0:
            if not lenient:
                return -1
            repairs.append(Repair.MISSING_CLOSE_TAG)
            nexts = (text.find(tags.parameter, end), text.find(tags.function_end, end))
            close = min([i for i in nexts if i >= 0], default=len(text))
            after = close
        else:
            after = close + len(tags.parameter_end)
        if not key or key in params:
            return -1
        params[key] = _value(text[end + 1 : close], tags)
        pos = after


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _name(opener: str) -> str:
    """The name an opener gives: bare (`get_weather`), or quoted as an attribute's value and
    maybe followed by other attributes (`"city" string="true"`, Seed 2's typed parameters)."""
    opener = opener.strip()
    if opener[:1] in "\"'":
        end = opener.find(opener[0], 1)
        return opener[1:end] if end > 0 else opener
    return opener


def _value(value: str, tags: Tags) -> str:
    """The value as written: one newline dropped on each side where the layout puts them
    there, a CDATA section's text unwrapped."""
    if tags.lines:
        value = value[1:] if value.startswith("\n") else value
        value = value[:-1] if value.endswith("\n") else value
    if tags.cdata and value.startswith("<![CDATA[") and value.endswith("]]>"):
        value = value[len("<![CDATA[") : -len("]]>")]
    return value
