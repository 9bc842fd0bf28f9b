"""`ast.parse` made safe to call from several threads at once.

CPython 3.11 keeps one recursion counter per interpreter while it turns a parse tree into
`ast` objects; two threads parsing at the same moment can corrupt it and fail with
`SystemError: AST constructor recursion depth mismatch` (python/cpython#106905, seen here
about once in 240,000 parses on 8 threads). Every parse of Toolwire's own code goes
through this lock; the cost is a few microseconds when nobody else parses.
"""

from __future__ import annotations

import ast
import sys
import threading
from typing import Literal, overload

__all__ = ["parse_python"]

_LOCK = threading.Lock()
_RACY = sys.version_info < (3, 12)


@overload
def parse_python(source: str, mode: Literal["eval"]) -> ast.Expression: ...


@overload
def parse_python(source: str, mode: Literal["exec"] = "exec") -> ast.Module: ...


def parse_python(source: str, mode: Literal["eval", "exec"] = "exec") -> ast.AST:
    """`ast.parse(source, mode=mode)`, one thread at a time where CPython needs it.

    Raises:
        SyntaxError: `source` is not Python.
    """
    if not _RACY:
        return ast.parse(source, mode=mode)
    with _LOCK:
        return ast.parse(source, mode=mode)
