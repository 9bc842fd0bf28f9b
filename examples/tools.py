"""Example tools: every public function in this module becomes a Toolwire tool."""

from __future__ import annotations

import ast
import hashlib
import math
import operator
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from registry import parse_python

_CONDITIONS = ("sunny", "partly cloudy", "cloudy", "light rain", "windy", "foggy", "snowy")

# Units per 1 USD; fixed so the demo gives the same answer everywhere.
_USD_RATES: dict[str, float] = {
    "USD": 1.0,
    "EUR": 0.92,
    "GBP": 0.79,
    "JPY": 150.0,
    "CHF": 0.88,
    "CAD": 1.36,
    "AUD": 1.52,
    "CNY": 7.2,
    "INR": 83.0,
}

_BINARY_OPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY_OPS: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
# Bounds keep a single request from burning CPU on 9**9**9 or a giant input.
_MAX_EXPRESSION_LENGTH = 200
_MAX_RESULT_DIGITS = 308


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, Any]:
    """Get the current weather for a city (demo data derived from the name, no network call).

    Args:
        city: Name of the city, e.g. "Paris".
        unit: Temperature unit, "celsius" or "fahrenheit".
    """
    name = city.strip()
    if not name:
        raise ValueError("city must not be empty")
    digest = hashlib.sha256(name.lower().encode()).digest()
    celsius = digest[0] % 36 - 5
    temperature = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32)
    return {
        "city": name,
        "temperature": temperature,
        "unit": unit,
        "condition": _CONDITIONS[digest[1] % len(_CONDITIONS)],
        "humidity": 30 + digest[2] % 61,
    }


def get_current_time(timezone: str = "UTC") -> str:
    """Get the current date and time in an IANA timezone, as ISO 8601.

    Args:
        timezone: IANA timezone name, e.g. "Europe/Paris" or "UTC".
    """
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(
            f"unknown timezone {timezone!r}: use an IANA name such as 'Europe/Paris'"
        ) from exc
    return datetime.now(zone).isoformat(timespec="seconds")


def calculate(expression: str) -> float:
    """Evaluate an arithmetic expression: numbers, + - * / // % **, unary signs, parentheses.

    Args:
        expression: The expression, e.g. "2 * (3 + 4)".
    """
    if len(expression) > _MAX_EXPRESSION_LENGTH:
        raise ValueError(f"expression longer than {_MAX_EXPRESSION_LENGTH} characters")
    try:
        # Toolwire's parse is safe from many threads at once (CPython 3.11's is not).
        tree = parse_python(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {expression!r}") from exc
    try:
        result = float(_evaluate(tree.body))
    except ZeroDivisionError as exc:
        raise ValueError("division by zero") from exc
    except OverflowError as exc:
        raise ValueError("result too large") from exc
    # inf and nan are not valid JSON, so they cannot go back to the model as a result.
    if not math.isfinite(result):
        raise ValueError("result too large")
    return result


def convert_currency(amount: float, from_currency: str, to_currency: str) -> dict[str, Any]:
    """Convert an amount between currencies using fixed demo exchange rates.

    Args:
        amount: The amount of money to convert.
        from_currency: ISO 4217 code of the source currency, e.g. "USD".
        to_currency: ISO 4217 code of the target currency, e.g. "EUR".
    """
    source, target = from_currency.strip().upper(), to_currency.strip().upper()
    for code in (source, target):
        if code not in _USD_RATES:
            known = ", ".join(sorted(_USD_RATES))
            raise ValueError(f"unknown currency {code!r}; known: {known}")
    rate = _USD_RATES[target] / _USD_RATES[source]
    return {
        "amount": amount,
        "from": source,
        "to": target,
        "rate": round(rate, 6),
        "result": round(amount * rate, 2),
    }


def _evaluate(node: ast.expr) -> int | float:
    """Evaluate one node of a parsed arithmetic expression."""
    value = node.value if isinstance(node, ast.Constant) else None
    # bool is an int subclass, but True + True is not arithmetic a user meant.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY_OPS:
        return _UNARY_OPS[type(node.op)](_evaluate(node.operand))  # type: ignore[no-any-return]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY_OPS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        return _BINARY_OPS[type(node.op)](left, right)  # type: ignore[no-any-return]
    raise ValueError(f"unsupported syntax in expression: {ast.unparse(node)!r}")


def _check_power(base: int | float, exponent: int | float) -> None:
    """Refuse powers whose result would be huge or complex."""
    if base < 0 and exponent != int(exponent):
        raise ValueError("fractional power of a negative number")
    if abs(base) > 1 and exponent * math.log10(abs(base)) > _MAX_RESULT_DIGITS:
        raise ValueError("result too large")
