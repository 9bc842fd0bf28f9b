"""Kimi K3's XTML tool calls, read under the family's name `kimi` (formats/kimi.py).

    <|open|>think<|sep|>…<|close|>think<|sep|>
    <|open|>response<|sep|>Let me check.<|close|>response<|sep|>
    <|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>
    <|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>
    <|open|>argument key="days" type="number"<|sep|>2<|close|>argument<|sep|>
    <|close|>call<|sep|><|close|>tools<|sep|>

(on one line). The reply is in channels: reasoning in `think`, the answer in `response`
(whose opener the template prefills when thinking is off), calls in `tools`. A call's tool
and an argument's key are attributes (`&amp;`, `&quot;`, `&lt;` escaped); a value is raw text,
held as written when its type is `string` and read as JSON otherwise. The markers are special
tokens: the server must keep them (and not put spaces between them).
"""

from __future__ import annotations

import html
import json
import re
from functools import partial
from typing import Any

from ..filters import FilteredText
from ..repairs import Decoded, Repair
from ..scanning import BodyScanner, XmlScanner, neutralise_tokens, partial_overlap
from ..toolspecs import ToolSpecs
from ..values import typed_arguments

OPEN, CLOSE, SEP = "<|open|>", "<|close|>", "<|sep|>"
THINK_OPEN, THINK_CLOSE = f"{OPEN}think{SEP}", f"{CLOSE}think{SEP}"
CALL_OPEN, CALL_CLOSE = f'{OPEN}call tool="', f"{CLOSE}call{SEP}"
ARGUMENT_OPEN, ARGUMENT_CLOSE = f"{OPEN}argument ", f"{CLOSE}argument{SEP}"
TOOLS_OPEN, TOOLS_CLOSE = f"{OPEN}tools{SEP}", f"{CLOSE}tools{SEP}"
TOKENS = (OPEN, CLOSE, SEP, "<|end_of_msg|>")
"""The XTML tokens, broken in text the model did not write."""
_TYPES = {bool: "boolean", int: "number", float: "number", dict: "object", list: "array"}
DROP = (
    *(
        f"{mark}{space}{channel}{space}{SEP}"
        for mark in (OPEN, CLOSE)
        for channel in ("response", "tools")
        for space in ("", " ")
    ),
    f"{CLOSE}message{SEP}",
    "<|end_of_msg|>",
    THINK_CLOSE,  # a think channel the template opened when the request did not say so
)
"""Channel markers that carry nothing once the calls are read (with the spaces a server
that puts spaces between special tokens leaves)."""
_HEAD = re.compile(rf'([^"]+)"(?:\s+index="\d*")?\s*{re.escape(SEP)}')
_ARGUMENT = re.compile(
    rf'\s*{re.escape(ARGUMENT_OPEN)}key="([^"]*)"(?:\s+type="([^"]*)")?\s*{re.escape(SEP)}'
    rf"(.*?){re.escape(ARGUMENT_CLOSE)}",
    re.DOTALL,
)


def _whole(buf: str) -> int:
    """Where the text that may still be an unfinished marker begins."""
    start = max(buf.rfind(OPEN), buf.rfind(CLOSE))
    if start >= 0 and SEP not in buf[start:]:
        return start
    return len(buf) - max(partial_overlap(buf, OPEN), partial_overlap(buf, CLOSE))


WholeMarkers = partial(FilteredText, ready=_whole)
"""Feeds a parser whole XTML markers only: text from an `<|open|>` or `<|close|>` whose
`<|sep|>` has not come yet is held, so a marker split across deltas is never taken for a
stray special token (and stripped) before the rest of it arrives."""


def is_k3(body: str) -> bool:
    """Whether a call's body (after `<|open|>call tool="`) is K3's."""
    return _HEAD.match(body) is not None


def scanner(lenient: bool) -> BodyScanner:
    """Ends at the call's close outside argument values; lenient, also at the next call or
    the end of the tools channel (the close was left out)."""
    ends = (CALL_OPEN, TOOLS_CLOSE) if lenient else ()
    return XmlScanner(CALL_CLOSE, ends=ends, value=(ARGUMENT_OPEN, ARGUMENT_CLOSE))


def decode(body: str, lenient: bool, specs: ToolSpecs | None = None) -> Decoded | None:
    """`NAME" index="N"<|sep|>` then the arguments, each typed by its `type`, then converted
    by the tool's schema in `specs` (a number the model typed `string`, an object's members)."""
    head = _HEAD.match(body)
    if head is None:
        return None
    arguments: dict[str, Any] = {}
    pos = head.end()
    for argument in _ARGUMENT.finditer(body, pos):
        if argument.start() != pos:
            return None
        key = html.unescape(argument.group(1))
        if not key or key in arguments:
            return None
        kind, raw = argument.group(2) or "string", argument.group(3)
        if kind == "string":
            arguments[key] = raw
        else:
            try:
                arguments[key] = json.loads(raw)
            except ValueError:
                return None
        pos = argument.end()
    if body[pos:].strip():
        return None
    repairs: list[Repair] = []
    name = html.unescape(head.group(1))
    if specs is not None:
        parameters = specs.parameters(name)
        arguments = typed_arguments(arguments, parameters, lenient, repairs, typed=True)
    return [(name, arguments)], repairs


def render_call(name: str, arguments: Any, index: int) -> str:
    """One call: the tool and each key as escaped attributes, a value typed by its JSON type
    (a string as written, the others as JSON)."""
    params = arguments if isinstance(arguments, dict) else {"arguments": arguments}
    body = "".join(
        f'{ARGUMENT_OPEN}key="{html.escape(key)}" type="{_type(value)}"{SEP}'
        f"{_text(value)}"
        f"{ARGUMENT_CLOSE}"
        for key, value in params.items()
    )
    return f'{CALL_OPEN}{html.escape(name)}" index="{index}"{SEP}{body}{CALL_CLOSE}'


def _type(value: Any) -> str:
    if value is None:
        return "null"
    return "string" if isinstance(value, str) else _TYPES.get(type(value), "string")


def _text(value: Any) -> str:
    if isinstance(value, str):
        return neutralise_tokens(value, TOKENS)  # a raw value cannot escape a marker
    return json.dumps(value, ensure_ascii=False)
