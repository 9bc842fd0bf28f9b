"""Python literals read with `ast` and an explicit whitelist: nothing is ever evaluated."""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any

from registry import parse_python

_NAMES: dict[str, Any] = {
    "True": True,
    "False": False,
    "None": None,
    "true": True,
    "false": False,
    "null": None,
}
_MAX_DEPTH = 64
_MAX_SOURCE = 1_000_000
_RAW_IN_STRING = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x00": "\\x00"}
_PADDED_INT = re.compile(r"0+([1-9][0-9]*)(?![0-9.eEjJxXoObB_])")


class NotLiteral(ValueError):
    """The source is not a whitelisted literal."""


def parse_expression(source: str) -> ast.expr:
    """The expression node of `source`.

    Raises:
        NotLiteral: the source is too long or not a Python expression.
    """
    if len(source) > _MAX_SOURCE:
        raise NotLiteral("too long")
    try:
        return parse_python(source.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise NotLiteral(str(exc)) from exc


def literal(node: ast.AST, depth: int = 0) -> Any:
    """The JSON-compatible value of a literal node (tuples become lists).

    Raises:
        NotLiteral: the node is anything but str, int, float, bool, None, list, tuple, set
            (read as a list: JSON has no sets) or dict with string keys, or a non-finite
            number.
    """
    if depth > _MAX_DEPTH:
        raise NotLiteral("nested too deeply")
    if isinstance(node, ast.Constant):
        return _constant(node.value)
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [literal(item, depth + 1) for item in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            name = literal(key, depth + 1) if key is not None else None
            if not isinstance(name, str):
                raise NotLiteral("dict keys must be strings")
            out[name] = literal(value, depth + 1)
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = literal(node.operand, depth + 1)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise NotLiteral("sign on a non-number")
        return -value if isinstance(node.op, ast.USub) else value
    raise NotLiteral(f"not a literal: {type(node).__name__}")


def literal_value(source: str) -> Any:
    """Parse and read a literal.

    Raises:
        NotLiteral: see `literal`.
    """
    return literal(parse_expression(source))


def plain_source(source: str) -> str:
    """`source` with what Python refuses but a model plainly means made valid: raw newlines,
    tabs and NULs inside strings escaped (a multi-line shell command), zero-padded integers
    (`month=07`) unpadded. Text Python already reads is returned as it is."""
    out: list[str] = []
    quote, i, n = "", 0, len(source)
    while i < n:
        ch = source[i]
        if quote:
            if ch == "\\" and i + 1 < n:
                out.append(source[i : i + 2])
                i += 2
                continue
            quote = "" if ch == quote else quote
            out.append(_RAW_IN_STRING.get(ch, ch))
        elif ch in "\"'":
            quote = ch
            out.append(ch)
        elif ch == "0" and not (i and (source[i - 1].isalnum() or source[i - 1] in "._")):
            padded = _PADDED_INT.match(source, i)
            if padded:
                out.append(padded.group(1))
                i = padded.end()
                continue
            out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _constant(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise NotLiteral("non-finite number")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise NotLiteral(f"not a JSON value: {type(value).__name__}")


def render(value: Any) -> str:
    """A JSON-compatible value written as a Python literal (strings JSON-quoted, valid Python)."""
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value is None:
        return "None"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        items = ", ".join(f"{render(str(k))}: {render(v)}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(render(v) for v in value) + "]"
    return repr(value)
