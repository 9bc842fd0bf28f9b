"""How the demo model picks its tool calls: the jobs it knows (the example tools), the tool a
request offers for each (its own, or a client's named for the job), the calls a prompt asks
for (places, time zones, expressions, currency amounts, found by patterns) and their wire
form."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from .demo_programs import program_tools

__all__ = [
    "CALCULATE",
    "CONVERT",
    "KNOWN_TOOLS",
    "TIME",
    "WEATHER",
    "Offered",
    "call_arguments",
    "offered_tools",
    "plan_calls",
    "program_jobs",
    "wire_call",
]

WEATHER, TIME, CALCULATE, CONVERT = (
    "get_weather",
    "get_current_time",
    "calculate",
    "convert_currency",
)
KNOWN_TOOLS = (WEATHER, TIME, CALCULATE, CONVERT)

_CITY_ZONES = {
    "amsterdam": "Europe/Amsterdam",
    "beijing": "Asia/Shanghai",
    "berlin": "Europe/Berlin",
    "chicago": "America/Chicago",
    "delhi": "Asia/Kolkata",
    "dubai": "Asia/Dubai",
    "london": "Europe/London",
    "los angeles": "America/Los_Angeles",
    "madrid": "Europe/Madrid",
    "moscow": "Europe/Moscow",
    "mumbai": "Asia/Kolkata",
    "new york": "America/New_York",
    "paris": "Europe/Paris",
    "rome": "Europe/Rome",
    "san francisco": "America/Los_Angeles",
    "sao paulo": "America/Sao_Paulo",
    "shanghai": "Asia/Shanghai",
    "singapore": "Asia/Singapore",
    "sydney": "Australia/Sydney",
    "tokyo": "Asia/Tokyo",
    "toronto": "America/Toronto",
    "utc": "UTC",
    "gmt": "UTC",
}
_CURRENCY_WORDS = {"dollar": "USD", "euro": "EUR", "pound": "GBP", "yen": "JPY", "franc": "CHF"}
_CURRENCY_CODES = frozenset(
    {"USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "CNY", "INR", "SEK", "NOK", "DKK", "PLN"}
    | {"MXN", "BRL", "KRW", "SGD", "HKD", "NZD", "ZAR"}
)

# A place list ends at punctuation; its items are split on commas and "and".
_WEATHER_ASK = re.compile(
    r"\b(?:weather|temperature|forecast)(?:\s+(?:like|today|now|forecast))*\s+(?:in|for|at)\s+"
    r"(?P<places>[^.?!;:\n]+)",
    re.IGNORECASE,
)
_TIME_ASK = re.compile(
    r"\btime(?:\s+is\s+it)?(?:\s+(?:now|right\s+now))?\s+(?:in|at|for)\s+"
    r"(?P<places>[^.?!;:\n]+)",
    re.IGNORECASE,
)
_BARE_TIME_ASK = re.compile(r"\b(?:what\s+time|current\s+time|time\s+is\s+it)\b", re.IGNORECASE)
_IANA_ZONE = re.compile(r"\b[A-Z][A-Za-z]+/[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_]+)?\b")
_PLACE_SEPARATOR = re.compile(r",|\band\b|&", re.IGNORECASE)
# A place stops at the first word that belongs to the sentence rather than to the name.
_PLACE_END = re.compile(
    r"\b(?:weather|temperature|forecast|time|what|how|is|it|in|at|for|today|tomorrow|now|"
    r"right|please|currently|also|then|calculate|compute|convert|the|a|an)\b|'s\b",
    re.IGNORECASE,
)
_MATH_ASK = re.compile(
    r"\b(?:calculate|compute|evaluate|what\s+is|what's|how\s+much\s+is)\b", re.IGNORECASE
)
# \u00d7 and \u00f7 are the multiplication and division signs people paste in.
_EXPRESSION = re.compile(r"[-(\d][-+*/%^\u00d7\u00f7().\d\s]*[\d)]")
_HAS_OPERATION = re.compile(r"[\d)]\s*(?:[-+*/%^\u00d7\u00f7]|\*\*|//)\s*[-(\d]")
_CONVERSION_ASK = re.compile(
    r"(?P<amount>\d+(?:[.,]\d+)?)\s*(?P<source>[A-Za-z]{3}|dollars?|euros?|pounds?|yen|francs?)"
    r"\s+(?:to|in|into)\s+(?P<target>[A-Za-z]{3}|dollars?|euros?|pounds?|yen|francs?)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Call:
    """One tool call the demo model decided to make."""

    position: int
    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Offered:
    """The tool a request offers for one of the demo's jobs: its wire name and parameters."""

    name: str
    parameters: frozenset[str] = frozenset()


# Besides its own name, a tool fits a job when its name says so (a client's `add_numbers`
# does not fit; its `calculator` or `weather_lookup` does).
_FITS = {
    WEATHER: re.compile(r"weather|forecast", re.IGNORECASE),
    TIME: re.compile(r"time|clock", re.IGNORECASE),
    CALCULATE: re.compile(r"calc|arithmetic|evaluate|math", re.IGNORECASE),
    CONVERT: re.compile(r"currenc|exchange_rate", re.IGNORECASE),
}
_MAIN_ARGUMENT = {WEATHER: "city", TIME: "timezone", CALCULATE: "expression"}


def offered_tools(body: dict[str, Any]) -> dict[str, Offered]:
    """The tool the request offers for each of the demo's jobs.

    A tool named exactly for the job wins; otherwise the last one that fits. The proxy puts
    its own tools first and the client's after them, so an agent's own `calculate` or
    `read_clock` is called, and comes back to the agent, rather than the proxy's
    `demo_calculate` or `demo_get_current_time`.
    """
    choice = body.get("tool_choice")
    if choice == "none":
        return {}
    forced = None
    if isinstance(choice, dict):
        forced = (choice.get("function") or {}).get("name")
    offered: dict[str, Offered] = {}
    for tool in body.get("tools") or []:
        function = (tool.get("function") or {}) if isinstance(tool, dict) else {}
        name = function.get("name")
        if not isinstance(name, str) or (forced is not None and name != forced):
            continue
        job = _job(name)
        if job is not None and offered.get(job, Offered("")).name != job:
            offered[job] = Offered(name, _parameters(function.get("parameters")))
    return offered


def program_jobs(body: dict[str, Any]) -> dict[str, Offered]:
    """The demo's jobs among the functions `run_code` offers."""
    jobs: dict[str, Offered] = {}
    for name, parameters in program_tools(body).items():
        job = _job(name)
        if job is not None and job not in jobs:
            jobs[job] = Offered(name, parameters)
    return jobs


def _job(name: str) -> str | None:
    # The proxy prefixes names with a namespace, so a suffix identifies its example tools.
    known = next((k for k in KNOWN_TOOLS if name.endswith(k)), None)
    return known or next((job for job, fits in _FITS.items() if fits.search(name)), None)


def _parameters(schema: Any) -> frozenset[str]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return frozenset(properties) if isinstance(properties, dict) else frozenset()


def call_arguments(offered: Offered, call: _Call) -> dict[str, Any]:
    """The call's arguments under the offered tool's own parameter names where they differ:
    a tool with one parameter gets the job's main argument under that parameter's name."""
    main = _MAIN_ARGUMENT.get(call.tool)
    if set(call.arguments) <= offered.parameters or main is None or len(offered.parameters) != 1:
        return call.arguments
    (parameter,) = offered.parameters
    return {parameter: call.arguments[main]}


def plan_calls(prompt: str, tools: Mapping[str, Offered]) -> list[_Call]:
    extractors = {
        WEATHER: _weather_calls,
        TIME: _time_calls,
        CALCULATE: _calculate_calls,
        CONVERT: _convert_calls,
    }
    calls = [call for tool in tools for call in extractors[tool](prompt)]
    return sorted(calls, key=lambda call: call.position)


def _weather_calls(prompt: str) -> Iterator[_Call]:
    unit = "fahrenheit" if re.search(r"fahrenheit|°F", prompt, re.IGNORECASE) else None
    for match in _WEATHER_ASK.finditer(prompt):
        for offset, place in _places(match):
            arguments: dict[str, Any] = {"city": place}
            if unit:
                arguments["unit"] = unit
            yield _Call(offset, WEATHER, arguments)


def _time_calls(prompt: str) -> Iterator[_Call]:
    found = False
    for match in _TIME_ASK.finditer(prompt):
        for offset, place in _places(match):
            zone = _CITY_ZONES.get(place.lower()) or _zone_in(place) or place
            found = True
            yield _Call(offset, TIME, {"timezone": zone})
    if not found:
        zone_match = _IANA_ZONE.search(prompt)
        bare = _BARE_TIME_ASK.search(prompt)
        if zone_match and bare:
            yield _Call(zone_match.start(), TIME, {"timezone": zone_match.group()})
        elif bare:
            yield _Call(bare.start(), TIME, {"timezone": "UTC"})


def _calculate_calls(prompt: str) -> Iterator[_Call]:
    ask = _MATH_ASK.search(prompt)
    if ask is None:
        return
    for match in _EXPRESSION.finditer(prompt, ask.end()):
        expression = match.group().strip()
        if _HAS_OPERATION.search(expression):
            normalized = expression.replace("^", "**").replace("\u00d7", "*").replace("\u00f7", "/")
            yield _Call(match.start(), CALCULATE, {"expression": normalized})


def _convert_calls(prompt: str) -> Iterator[_Call]:
    for match in _CONVERSION_ASK.finditer(prompt):
        source, target = _currency(match.group("source")), _currency(match.group("target"))
        if source and target:
            amount = float(match.group("amount").replace(",", "."))
            arguments = {"amount": amount, "from_currency": source, "to_currency": target}
            yield _Call(match.start(), CONVERT, arguments)


def _places(match: re.Match[str]) -> Iterator[tuple[int, str]]:
    """The places listed after "weather in" / "time in", with their positions."""
    text, cursor = match.group("places"), 0
    for part in _PLACE_SEPARATOR.split(text):
        cursor = text.index(part, cursor)
        end = _PLACE_END.search(part)
        place = (part[: end.start()] if end else part).strip(" \t'\"")
        if place and len(place.split()) <= 4:
            yield match.start("places") + cursor, place.title() if place.islower() else place
        cursor += len(part)


def _zone_in(text: str) -> str | None:
    match = _IANA_ZONE.search(text)
    return match.group() if match else None


def _currency(word: str) -> str | None:
    lowered = word.lower().removesuffix("s")
    if lowered in _CURRENCY_WORDS:
        return _CURRENCY_WORDS[lowered]
    # An unknown code counts only when written in capitals, so "5 for you" is no conversion.
    if word.upper() in _CURRENCY_CODES or (len(word) == 3 and word.isupper()):
        return word.upper()
    return None


def wire_call(index: int, offered: Offered, call: _Call) -> dict[str, Any]:
    arguments = orjson.dumps(call_arguments(offered, call)).decode()
    return {
        "index": index,
        "id": f"call_{secrets.token_hex(12)}",
        "type": "function",
        "function": {"name": offered.name, "arguments": arguments},
    }
