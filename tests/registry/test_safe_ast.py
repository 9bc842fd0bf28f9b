"""Parsing Python from many threads at once never fails (CPython 3.11's ast.parse can)."""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor

import pytest

from registry import parse_python


def test_parses_like_ast_parse() -> None:
    tree = parse_python("1 + 2", mode="eval")
    assert isinstance(tree, ast.Expression)
    assert ast.dump(tree) == ast.dump(ast.parse("1 + 2", mode="eval"))
    with pytest.raises(SyntaxError):
        parse_python("1 +", mode="eval")


def test_many_threads_parse_at_once() -> None:
    expression = "(" * 20 + "1 + 2 * 3" + ")" * 20
    with ThreadPoolExecutor(8) as pool:
        trees = list(pool.map(lambda _: parse_python(expression, mode="eval"), range(4000)))
    assert len({ast.dump(t) for t in trees}) == 1
