"""MiniMax M3's namespaced calls, read under the family's name `minimax` (formats/minimax.py).

    ]<]minimax[>[<tool_call>
    ]<]minimax[>[<invoke name="search">
    ]<]minimax[>[<query>hotels]<]minimax[>[</query>
    ]<]minimax[>[<filters>]<]minimax[>[<lang>en]<]minimax[>[</lang>]<]minimax[>[</filters>
    ]<]minimax[>[<tags>]<]minimax[>[<item>a]<]minimax[>[</item>]<]minimax[>[</tags>
    ]<]minimax[>[</invoke>
    ]<]minimax[>[</tool_call>

Every tag is prefixed with the namespace marker `]<]minimax[>[`. A parameter is an element
named after it: its text is a value (converted by the tool's schema like the other text
formats'), its child elements an object, or a list when the schema says array or every child
is an `<item>` (how the template writes list members); a name repeated among siblings
collects its values in a list. Empty elements are an empty list or object where the schema
wants one. The markers are plain added tokens: servers keep them, though one that puts spaces
between added tokens leaves blanks between a marker and its tag, which are read past.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import partial
from typing import Any

from ..filters import FilteredText
from ..repairs import Decoded, Repair
from ..scanning import partial_overlap
from ..toolspecs import ToolSpecs
from ..values import convert, schema_types

NS = "]<]minimax[>["
TOOL_CALL, TOOL_CALL_END = f"{NS}<tool_call>", f"{NS}</tool_call>"
INVOKE, INVOKE_END = f"{NS}<invoke name=", f"{NS}</invoke>"
ITEM = "item"
_MAX_DEPTH = 64
_SPACED = re.compile(rf"{re.escape(NS)}\s+(?=<)")
_SPACED_TAIL = re.compile(rf"{re.escape(NS)}\s*$")
Element = str | list[tuple[str, "Element"]]
"""An element's text, or its children as (name, element) in order."""


class MarkerScanner:
    """Ends at the first of `markers`, wherever it stands: an M3 body holds no quoted text,
    and its markers open with `]`, not `<`."""

    def __init__(self, *markers: str) -> None:
        self._markers = markers
        self._pos = 0
        self._reach = max(len(m) for m in markers) - 1

    def scan(self, buf: str) -> tuple[int, str] | None:
        """(index, marker) of the first marker; None while the body goes on."""
        hits = [(i, m) for m in self._markers if (i := buf.find(m, self._pos)) >= 0]
        if hits:
            return min(hits)
        self._pos = max(self._pos, len(buf) - self._reach)
        return None


def _settled(buf: str) -> int:
    """Up to a marker at the end (maybe followed by blanks), or a marker's first part."""
    tail = _SPACED_TAIL.search(buf)
    return tail.start() if tail else len(buf) - partial_overlap(buf, NS)


def _tightened(text: str) -> str:
    return _SPACED.sub(NS, text)


TightMarkers = partial(FilteredText, ready=_settled, rewrite=_tightened)
"""Feeds a parser the text with the blanks between a namespace marker and its tag taken out
(`]<]minimax[>[ <invoke` is `]<]minimax[>[<invoke`); a marker at the end of a delta is held
until what follows it shows."""


def decode(body: str, lenient: bool, specs: ToolSpecs) -> Decoded | None:
    """`"NAME">` then parameter elements, converted by the tool's schema; None if malformed."""
    end = body.find(">")
    name = body[:end].strip().strip("\"'") if end > 0 else ""
    children = _children(body, end + 1, 0) if name else None
    if children is None:
        return None
    elements, pos = children
    if body[pos:].strip():
        return None
    repairs: list[Repair] = []
    parameters = specs.parameters(name)
    return [(name, _object(elements, parameters, lenient, repairs))], repairs


def render(value: Any) -> str:
    """A value as an element's content: text, child elements, or `<item>` children."""
    if isinstance(value, dict):
        return "".join(f"{NS}<{k}>{render(v)}{NS}</{k}>" for k, v in value.items())
    if isinstance(value, list):
        return "".join(f"{NS}<{ITEM}>{render(v)}{NS}</{ITEM}>" for v in value)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _children(text: str, pos: int, depth: int) -> tuple[list[tuple[str, Element]], int] | None:
    """The elements from `pos` up to the first closing tag (or the end), and where they stop."""
    found: list[tuple[str, Element]] = []
    while True:
        start = text.find(NS, pos)
        if start < 0 or text.startswith(f"{NS}</", start):
            return found, len(text) if start < 0 else start
        if text[pos:start].strip():
            return None
        element = _element(text, start + len(NS), depth)
        if element is None:
            return None
        name, value, pos = element
        found.append((name, value))


def _element(text: str, pos: int, depth: int) -> tuple[str, Element, int] | None:
    """The element whose `<name>` starts at `pos`: (name, value, position after its close)."""
    end = text.find(">", pos)
    name = text[pos + 1 : end] if text.startswith("<", pos) and end > 0 else ""
    if not name.strip() or depth > _MAX_DEPTH:
        return None
    close = f"{NS}</{name}>"
    inner = _children(text, end + 1, depth + 1)
    if inner is None:
        # Text with a marker in it that opens no element: read as the element's text.
        stop = text.find(close, end + 1)
        return None if stop < 0 else (name, text[end + 1 : stop], stop + len(close))
    children, stop = inner
    if not text.startswith(close, stop):
        return None
    value: Element = children if children else text[end + 1 : stop]
    return name, value, stop + len(close)


def _convert(value: Element, schema: Any, lenient: bool, repairs: list[Repair]) -> Any:
    types = schema_types(schema)
    if isinstance(value, str):
        if not value.strip() and types and "string" not in types:
            if "array" in types:
                return []
            if "object" in types:
                return {}
        return convert(value, schema, lenient=lenient, repairs=repairs)
    is_list = "array" in types or ("object" not in types and all(name == ITEM for name, _ in value))
    if is_list:
        items = schema.get("items") if isinstance(schema, Mapping) else None
        return [_convert(child, items, lenient, repairs) for _, child in value]
    return _object(value, schema, lenient, repairs)


def _object(
    elements: list[tuple[str, Element]], schema: Any, lenient: bool, repairs: list[Repair]
) -> dict[str, Any]:
    """Named elements as an object; a name repeated collects its values in a list."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    properties = properties if isinstance(properties, Mapping) else {}
    extra = schema.get("additionalProperties") if isinstance(schema, Mapping) else None
    found: dict[str, Any] = {}
    repeated: set[str] = set()
    for name, element in elements:
        value = _convert(element, properties.get(name, extra), lenient, repairs)
        if name not in found:
            found[name] = value
        elif name in repeated:
            found[name].append(value)
        else:
            found[name] = [found[name], value]
            repeated.add(name)
    return found
