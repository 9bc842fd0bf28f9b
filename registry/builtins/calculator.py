"""The built-in calculator: arithmetic on a parsed syntax tree, never `eval`."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from registry.safe_ast import parse_python
from registry.tags import Tag
from registry.tool import Tool

__all__ = ["calculator_tools", "evaluate"]

_MAX_EXPRESSION = 1000
_MAX_NODES = 300
_MAX_INT_BITS = 4096
_MAX_EXPONENT = 10_000

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "floor": math.floor,
    "ceil": math.ceil,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}


def evaluate(expression: str) -> int | float:
    """Evaluate an arithmetic expression: + - * / // % **, parentheses, and the functions
    abs round min max sqrt exp log log10 sin cos tan floor ceil; constants pi e tau.

    Args:
        expression: For example "2 * (3 + 4) ** 2" or "sqrt(2) / 2".

    Raises:
        ValueError: the expression is not arithmetic, is too long, or its numbers too big.
    """
    if len(expression) > _MAX_EXPRESSION:
        raise ValueError(f"the expression is longer than {_MAX_EXPRESSION} characters")
    try:
        tree = parse_python(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {exc.msg}") from None
    if sum(1 for _ in ast.walk(tree)) > _MAX_NODES:
        raise ValueError("the expression is too complex")
    try:
        return _check(_eval(tree.body))
    except (ZeroDivisionError, OverflowError) as exc:
        raise ValueError(str(exc)) from None


def calculator_tools() -> list[Tool]:
    """The calculator tool."""
    return [
        Tool.from_function(
            evaluate, namespace="calc", tags=[Tag.READ_ONLY], idempotent=True, source="builtin"
        )
    ]


def _eval(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _check(_UNARY[type(node.op)](_eval(node.operand)))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _power(_eval(node.left), _eval(node.right))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _check(_BINARY[type(node.op)](_eval(node.left), _eval(node.right)))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _check(_FUNCTIONS[node.func.id](*(_eval(arg) for arg in node.args)))
    raise ValueError(f"unsupported syntax: {ast.unparse(node)!r}")


def _power(base: Any, exponent: Any) -> Any:
    if abs(exponent) > _MAX_EXPONENT:
        raise ValueError(f"exponents are limited to ±{_MAX_EXPONENT}")
    # An integer power's size is known before computing it: bits(base) * exponent.
    integral = isinstance(base, int) and isinstance(exponent, int) and exponent > 0
    if integral and base.bit_length() * exponent > _MAX_INT_BITS:
        raise ValueError(f"the result would exceed {_MAX_INT_BITS} bits")
    return _check(base**exponent)


def _check(value: Any) -> Any:
    if isinstance(value, complex):
        raise ValueError("the result is a complex number")
    if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
        raise ValueError(f"the result exceeds {_MAX_INT_BITS} bits")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("the result is not a finite number")
    return value
