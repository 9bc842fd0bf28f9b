"""How each family that writes a call as tags holding parameter tags (Qwen3-Coder's
`<function=…><parameter=…>`, MiniMax's `<invoke name="…">`, GLM's `<arg_key>`/`<arg_value>`
pairs) lays out a reply of calls, as grammar pieces.

Parameters come in the schema's order, the required ones required, no others; a string value
is raw text up to the value's closing tag, any other a JSON value of its schema (as the
families' parsers convert them).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from .grammar import Grammar, Lit, Node, Rep, Until, alt, chars, json_value, optional, seq
from .grammar import whitespace as ws
from .shapes import Shape

_KEY = Rep(chars("A-Za-z0-9_.\\-"), 1, 64)
_INDEX = Rep(chars("0-9"), 1, 3)
_FIELD = re.compile(r"\{(\w+)\}")


@dataclasses.dataclass(frozen=True, slots=True)
class _Tags:
    """One syntax: the call's opening and closing pieces (`{name}` in them is the tool's),
    a parameter's opening pieces (`{key}`) and its value's closing tag; blanks may sit between
    pieces."""

    call_open: tuple[str, ...]
    call_close: tuple[str, ...]
    key_open: tuple[str, ...]
    value_close: str
    padded: bool = False
    """Values may sit on lines of their own (`<parameter=k>\nvalue\n</parameter>`)."""

    def shape(self, block: tuple[str, str] = ("", "")) -> Shape:
        """The shape, calls optionally inside one `block`."""
        return Shape(
            self.call,
            arguments=self.arguments,
            before=(lambda g: seq(block[0], ws(g))) if block[0] else (lambda g: Lit("")),
            between=ws,
            after=(lambda g: seq(ws(g), block[1])) if block[1] else (lambda g: Lit("")),
        )

    def call(self, g: Grammar, name: str, arguments: Node) -> Node:
        """One call of tool `name`."""
        return seq(
            _pieces(g, self.call_open, name=name, index=_INDEX),
            ws(g),
            arguments,
            _pieces(g, self.call_close),
        )

    def arguments(self, g: Grammar, schema: dict[str, Any]) -> Node:
        """The parameters the schema declares, each followed by blanks."""
        properties = schema.get("properties")
        if not isinstance(properties, dict) or not properties:
            opening = _pieces(g, self.key_open, key=_KEY, string="true", type="string")
            any_key = seq(opening, Until(self.value_close), ws(g))
            return Rep(g.fresh("parameter", any_key), 0, None)
        required = set(schema.get("required") or [])
        items: list[Node] = []
        for key, value in properties.items():
            text = "true" if _is_text(value) else "false"
            opening = _pieces(g, self.key_open, key=str(key), string=text, type=_kind(value))
            one = seq(opening, self._value(g, value, self.value_close), ws(g))
            items.append(one if key in required else optional(g.fresh("parameter", one)))
        return seq(*items)

    def _value(self, g: Grammar, schema: Any, close: str) -> Node:
        if _is_text(schema):
            enum = schema.get("enum") if isinstance(schema, dict) else None
            if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
                return seq(self._pad(), alt(*enum), self._pad(), close)
            return Until(close)
        return seq(self._pad(), json_value(g, schema), self._pad(), close)

    def _pad(self) -> Node:
        return optional(Lit("\n")) if self.padded else Lit("")


def _is_text(schema: Any) -> bool:
    """A value the families write raw: a string (or one whose type may be a string, or none)."""
    if not isinstance(schema, dict):
        return True
    kind = schema.get("type")
    if isinstance(kind, list):
        return "string" in kind
    return kind in ("string", None) and not schema.get("properties")


def _pieces(g: Grammar, pieces: tuple[str, ...], **fills: Node | str) -> Node:
    """Pieces with blanks between them, each `{field}` filled (a text or a grammar node)."""
    items: list[Node | str] = []
    for i, piece in enumerate(pieces):
        if i:
            items.append(ws(g))
        for j, part in enumerate(_FIELD.split(piece)):
            items.append(fills[part] if j % 2 else part)
    return seq(*items)


def _kind(schema: Any) -> Node:
    """The type word of a value (Kimi K3's `type=`): `string` for raw text; a value written as
    JSON may carry any type word (the parser converts it by the schema either way)."""
    if _is_text(schema):
        return Lit("string")
    return alt("string", "number", "boolean", "object", "array", "null")


_FUNCTION = _Tags(
    ("<tool_call>", "<function={name}>"),
    ("</function>", "</tool_call>"),
    ("<parameter={key}>",),
    "</parameter>",
    padded=True,
)
_INVOKE = _Tags(
    ('<invoke name="{name}">',), ("</invoke>",), ('<parameter name="{key}">',), "</parameter>"
)
_GLM_KEYS = ("<arg_key>{key}</arg_key>", "<arg_value>")


def _glm(open: str, close: str) -> _Tags:
    return _Tags((open + "{name}",), (close,), _GLM_KEYS, "</arg_value>")


def _dsml(token: str, block: str) -> Shape:
    """DeepSeek's DSML invokes (and GigaChat's GCML), in one `block`."""
    tags = _Tags(
        (f'<{token}invoke name="{{name}}">',),
        (f"</{token}invoke>",),
        (f'<{token}parameter name="{{key}}" string="{{string}}">',),
        f"</{token}parameter>",
    )
    return tags.shape((f"<{token}{block}>", f"</{token}{block}>"))


_STEP3_INVOKE = (
    '<\uff5ctool_call_begin\uff5c>function<\uff5ctool_sep\uff5c><steptml:invoke name="{name}">'
)

_MUSE = _Tags(
    ("<|start|>assistant to={name}<|message|><atem:function_calls>", '<atem:invoke name="{name}">'),
    ("</atem:invoke>", "</atem:function_calls><|eom|>"),
    ('<atem:parameter name="{key}">',),
    "</atem:parameter>",
)

TAG_SHAPES: Mapping[str, Shape] = {
    "xml": _FUNCTION.shape(),
    "nemotron": _FUNCTION.shape(),
    "step": _FUNCTION.shape(),
    "mimo": dataclasses.replace(_FUNCTION, padded=False).shape(),
    "seed-oss": _Tags(
        ("<seed:tool_call>", "<function={name}>"),
        ("</function>", "</seed:tool_call>"),
        ("<parameter={key}>",),
        "</parameter>",
        padded=True,
    ).shape(),
    "minimax": _INVOKE.shape(("<minimax:tool_call>", "</minimax:tool_call>")),
    "dots": _INVOKE.shape(("<dots_function_call>", "</dots_function_call>")),
    "minicpm": _Tags(
        ('<function name="{name}">',), ("</function>",), ('<param name="{key}">',), "</param>"
    ).shape(),
    "glm": _glm("<tool_call>", "</tool_call>").shape(),
    "poolside": _glm("<tool_call>", "</tool_call>").shape(),
    "spark": _glm("<tool_call>", "</tool_call>").shape(),
    "ling": _glm("<tool_call>", "</tool_call>").shape(),
    "iquest": _glm("<iquest_tool_call>", "</iquest_tool_call>").shape(),
    "hy": _glm("<tool_call>", "</tool_call>").shape(("<tool_calls>", "</tool_calls>")),
    "hy-v3": _Tags(
        ("<tool_call>{name}<tool_sep>",), ("</tool_call>",), _GLM_KEYS, "</arg_value>"
    ).shape(("<tool_calls>", "</tool_calls>")),
    "k2-horizon": _Tags(
        ("<ifm|tool_call>{name}",),
        ("</ifm|tool_call>",),
        ("<ifm|arg_key>{key}</ifm|arg_key>", "<ifm|arg_value>"),
        "</ifm|arg_value>",
    ).shape(("<ifm|tool_calls>", "</ifm|tool_calls>")),
    "deepseek-v3.2": _dsml("\uff5cDSML\uff5c", "function_calls"),
    "deepseek-v4": _dsml("\uff5cDSML\uff5c", "tool_calls"),
    "gigachat-3.5": _dsml("\uff5cGCML\uff5c", "tool_calls"),
    "step3": _Tags(
        (_STEP3_INVOKE,),
        ("</steptml:invoke><\uff5ctool_call_end\uff5c>",),
        ('<steptml:parameter name="{key}">',),
        "</steptml:parameter>",
    ).shape(("<\uff5ctool_calls_begin\uff5c>", "<\uff5ctool_calls_end\uff5c>")),
    "kimi-k3": _Tags(
        ('<|open|>call tool="{name}" index="{index}"<|sep|>',),
        ("<|close|>call<|sep|>",),
        ('<|open|>argument key="{key}" type="{type}"<|sep|>',),
        "<|close|>argument<|sep|>",
    ).shape(("<|open|>tools<|sep|>", "<|close|>tools<|sep|>")),
    "muse": _MUSE.shape(),
    "muse-glimmer": _MUSE.shape(),
}
"""The tag-pair families, by format name."""
