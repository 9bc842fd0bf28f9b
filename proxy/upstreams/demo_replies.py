"""The demo model's answer once its tools ran: each trailing tool result read with its call's
name and arguments and said as a sentence (the example tools' results explained, any other
quoted), a program's printed results (code mode) likewise."""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

import orjson

from .demo_calls import CALCULATE, CONVERT, KNOWN_TOOLS, TIME, WEATHER
from .demo_programs import RUN_CODE, program_results

__all__ = ["content_text", "summarize"]

_UNIT_SYMBOLS = {"celsius": "°C", "fahrenheit": "°F"}
_MAX_QUOTE = 300


def summarize(messages: list[dict[str, Any]]) -> str:
    """Answer from the trailing tool results, reading each call's name and arguments."""
    results: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.insert(0, message)
    calls = {
        call.get("id"): call.get("function") or {}
        for message in messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or []
        if isinstance(call, dict)
    }
    sentences = []
    for result in results:
        function = calls.get(result.get("tool_call_id"), {})
        if function.get("name") == RUN_CODE and not content_text(result.get("content")).startswith(
            "Error"
        ):
            for name, arguments, content in program_results(content_text(result.get("content"))):
                sentences.append(_sentence(name, arguments, content))
            continue
        arguments = _loads(function.get("arguments"))
        sentences.append(
            _sentence(
                str(function.get("name") or result.get("name") or "tool"),
                arguments if isinstance(arguments, dict) else {},
                content_text(result.get("content")),
            )
        )
    return " ".join(sentences)


def _sentence(name: str, arguments: dict[str, Any], content: str) -> str:
    known = next((k for k in KNOWN_TOOLS if name.endswith(k)), None)
    if known is not None and not content.startswith("Error"):
        # Results that do not have the expected shape are quoted instead of explained.
        with contextlib.suppress(KeyError, TypeError, ValueError, AttributeError):
            return _EXPLAINERS[known](arguments, content)
    quoted = content if len(content) <= _MAX_QUOTE else content[:_MAX_QUOTE] + "…"
    verb = "failed" if content.startswith("Error") else "returned"
    return f"The {name} tool {verb}: {quoted}"


def _explain_weather(arguments: dict[str, Any], content: str) -> str:
    report = orjson.loads(content)
    city = report.get("city") or arguments["city"]
    symbol = _UNIT_SYMBOLS.get(report.get("unit") or arguments.get("unit") or "celsius", "")
    temperature = f"{report['temperature']} {symbol}".strip()
    return f"The weather in {city} is {temperature} and {report['condition']}."


def _explain_time(arguments: dict[str, Any], content: str) -> str:
    value = _loads(content)
    zone = arguments.get("timezone", "UTC")
    if isinstance(value, dict):
        # Shape of the reference MCP time server: {"timezone": ..., "datetime": ...}.
        zone, value = value.get("timezone", zone), value["datetime"]
    moment = datetime.fromisoformat(value if isinstance(value, str) else content.strip())
    return f"In {zone} it is {moment:%H:%M} on {moment:%A %d %B %Y}."


def _explain_calculation(arguments: dict[str, Any], content: str) -> str:
    return f"{arguments['expression']} = {_number(float(content))}."


def _explain_conversion(arguments: dict[str, Any], content: str) -> str:
    result = orjson.loads(content)
    amount = _number(float(result.get("amount", arguments.get("amount"))))
    return f"{amount} {result['from']} is {float(result['result']):.2f} {result['to']}."


_EXPLAINERS = {
    WEATHER: _explain_weather,
    TIME: _explain_time,
    CALCULATE: _explain_calculation,
    CONVERT: _explain_conversion,
}


def content_text(content: Any) -> str:
    """The text of a message's content, whether a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
