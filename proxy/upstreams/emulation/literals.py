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
_CLOSERS = ",)]}:"
_ESCAPES = "\n\\'\"abfnrtv01234567xNuU"
"""What may follow a backslash in a Python string; any other backslash stands for itself."""
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
    tabs and NULs inside strings escaped (a multi-line shell command), a backslash before a
    character no escape starts with (`'\\,'`) doubled, zero-padded integers (`month=07`)
    unpadded. Text Python already reads is returned as it is."""
    out: list[str] = []
    quote, i, n = "", 0, len(source)
    while i < n:
        ch = source[i]
        if quote:
            if ch == "\\" and i + 1 < n:
                escaped = source[i + 1]
                out.append(ch + escaped if escaped in _ESCAPES else "\\\\" + escaped)
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


def requoted_source(source: str) -> str | None:
    """`source` with its first string that the next same quote cannot end (a shell command's
    nested quotes: `command='sed -n '1,2p' f.py'`) closed at the one later quote after which
    the source parses, the quotes inside it escaped; None when no string is broken so, or when
    no reading, or more than one, parses."""
    i, n = 0, len(source)
    while i < n:
        if source[i] not in "\"'":
            i += 1
            continue
        ends = _quote_ends(source, i)
        if not ends:
            return None
        if _closes(source, ends[0]):
            i = ends[0] + 1
            continue
        readings = [_requote(source, i, j) for j in ends if _closes(source, j)]
        parsed = [text for text in readings if _parses(plain_source(text))]
        return parsed[0] if len(parsed) == 1 else None
    return None


def _quote_ends(source: str, start: int) -> list[int]:
    """Where the quote at `start` appears again, unescaped."""
    quote, ends, i = source[start], [], start + 1
    while i < len(source):
        if source[i] == "\\":
            i += 2
            continue
        if source[i] == quote:
            ends.append(i)
        i += 1
    return ends


def _closes(source: str, end: int) -> bool:
    """Whether a string may end at `end`: what follows is an argument's or a literal's end."""
    rest = source[end + 1 :].lstrip()
    return not rest or rest[0] in _CLOSERS


def _requote(source: str, start: int, end: int) -> str:
    quote = source[start]
    inner, i = [], start + 1
    while i < end:
        if source[i] == "\\":
            inner.append(source[i : i + 2])
            i += 2
            continue
        inner.append("\\" + quote if source[i] == quote else source[i])
        i += 1
    return source[: start + 1] + "".join(inner) + source[end:]


def _parses(source: str) -> bool:
    try:
        parse_expression(source)
    except NotLiteral:
        return False
    return True


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
