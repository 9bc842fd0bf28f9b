"""How the families that write Python calls (`[get_weather(city="Paris", days=3)]`: Toolwire's
`pythonic`, Llama 4, LFM2, OLMo 3) lay out a reply of calls, as grammar pieces: keyword
arguments in the schema's order, the required ones required, values Python literals of their
schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .grammar import Grammar, Lit, Node, Rep, chars, json_value, members, seq
from .grammar import whitespace as ws
from .shapes import Shape

_IDENTIFIER = seq(chars("A-Za-z_"), Rep(chars("A-Za-z0-9_"), 0, 63))


def _arguments(g: Grammar, schema: dict[str, Any]) -> Node:
    """`(key=value, …)` for the declared parameters; any keywords when none are declared."""
    declared = members(g, schema, 0, lambda key: key, "=")
    if declared is None:
        keyword = g.rule(
            "keyword", lambda: seq(_IDENTIFIER, ws(g), "=", ws(g), json_value(g, None))
        )
        declared = Rep(seq(keyword, Rep(seq(ws(g), ",", ws(g), keyword), 0, None)), 0, 1)
    return seq("(", ws(g), declared, ws(g), ")")


def _call(g: Grammar, name: str, arguments: Node) -> Node:
    return seq(name, arguments)


def _listed(open: str, close: str) -> Shape:
    """The calls in one Python list between `open` and `close`."""
    return Shape(
        _call,
        arguments=_arguments,
        before=lambda g: seq(open, "[", ws(g)),
        between=lambda g: seq(ws(g), ",", ws(g)),
        after=lambda g: seq(ws(g), "]", close),
        python=True,
    )


PYTHON_SHAPES: Mapping[str, Shape] = {
    "pythonic": _listed("<tool_call>", "</tool_call>"),
    "llama4-pythonic": _listed("", ""),
    "lfm2": _listed("<|tool_call_start|>", "<|tool_call_end|>"),
    "olmo3": Shape(
        _call,
        arguments=_arguments,
        before=lambda g: Lit("<function_calls>"),
        between=lambda g: Lit("\n"),
        after=lambda g: Lit("</function_calls>"),
        python=True,
    ),
}
"""The Python-call families, by format name."""
