"""Descriptions read from a function's docstring (Google, NumPy or reST style)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import docstring_parser

__all__ = ["Docstring", "read_docstring"]


@dataclass(frozen=True, slots=True)
class Docstring:
    """A function's description and its per-parameter descriptions."""

    description: str = ""
    params: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


def read_docstring(fn: Callable[..., Any]) -> Docstring:
    """Parse `fn`'s docstring; a missing or unparsable docstring gives empty descriptions."""
    text = inspect.getdoc(fn)
    if not text:
        return Docstring()
    try:
        parsed = docstring_parser.parse(text)
    except docstring_parser.ParseError:
        # A docstring that is prose only is still a good description.
        return Docstring(description=text.strip())
    parts = [p.strip() for p in (parsed.short_description, parsed.long_description) if p]
    params = {
        p.arg_name.lstrip("*"): " ".join(p.description.split())
        for p in parsed.params
        if p.description
    }
    return Docstring(description="\n\n".join(parts), params=MappingProxyType(params))
