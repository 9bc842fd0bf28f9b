"""The built-in demo model: a rule-based stand-in that calls the example tools, no server needed."""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from .base import collect
from .demo_programs import RUN_CODE, program_call, program_results, program_tools

__all__ = ["DEMO_MODEL", "DemoUpstream"]

DEMO_MODEL = "toolwire-demo"

_WEATHER, _TIME, _CALCULATE, _CONVERT = (
    "get_weather",
    "get_current_time",
    "calculate",
    "convert_currency",
)
_KNOWN_TOOLS = (_WEATHER, _TIME, _CALCULATE, _CONVERT)

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
_UNIT_SYMBOLS = {"celsius": "°C", "fahrenheit": "°F"}
_MAX_QUOTE = 300


@dataclass(frozen=True)
class _Call:
    """One tool call the demo model decided to make."""

    position: int
    tool: str
    arguments: dict[str, Any]


@dataclass
class _Message:
    """The assistant message the demo model answers with."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


class DemoUpstream:
    """Toolwire's built-in demo model (`base_url: demo`): rule-based, deterministic, offline."""

    def __init__(self, name: str = "demo") -> None:
        self.name = name

    @contextlib.asynccontextmanager
    async def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """Answer one Chat Completions request; yields an iterator of its chunks."""
        chunks = _chunks(body, _answer(body))
        try:
            yield chunks
        finally:
            await chunks.aclose()

    async def answer(
        self,
        body: dict[str, Any],
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> list[dict[str, Any]]:
        """One unstreamed answer (see `complete`)."""
        return await collect(self, body, headers=headers, deadline=deadline)

    async def list_models(self) -> list[str]:
        """The one model the demo serves."""
        return [DEMO_MODEL]

    async def aclose(self) -> None:
        """Nothing to release: the demo holds no connections."""


def _answer(body: dict[str, Any]) -> _Message:
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    if messages and messages[-1].get("role") == "tool":
        return _Message(content=_summarize(messages))
    tools = _offered_tools(body)
    if messages and messages[-1].get("role") == "user":
        inside = _program_jobs(body)
        if inside:
            # Offered run_code: one program runs every call (code mode).
            planned = _plan(_text(messages[-1].get("content")), inside)
            if planned:
                program = [(inside[c.tool].name, _arguments(inside[c.tool], c)) for c in planned]
                return _Message(tool_calls=[program_call(program)])
        calls = _plan(_text(messages[-1].get("content")), tools)
        if calls:
            wire = [_wire_call(index, tools[call.tool], call) for index, call in enumerate(calls)]
            return _Message(tool_calls=wire)
    return _Message(content=_introduction(tools))


@dataclass(frozen=True)
class _Offered:
    """The tool a request offers for one of the demo's jobs: its wire name and parameters."""

    name: str
    parameters: frozenset[str] = frozenset()


# Besides its own name, a tool fits a job when its name says so (a client's `add_numbers`
# does not fit; its `calculator` or `weather_lookup` does).
_FITS = {
    _WEATHER: re.compile(r"weather|forecast", re.IGNORECASE),
    _TIME: re.compile(r"time|clock", re.IGNORECASE),
    _CALCULATE: re.compile(r"calc|arithmetic|evaluate|math", re.IGNORECASE),
    _CONVERT: re.compile(r"currenc|exchange_rate", re.IGNORECASE),
}
_MAIN_ARGUMENT = {_WEATHER: "city", _TIME: "timezone", _CALCULATE: "expression"}


def _offered_tools(body: dict[str, Any]) -> dict[str, _Offered]:
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
    offered: dict[str, _Offered] = {}
    for tool in body.get("tools") or []:
        function = (tool.get("function") or {}) if isinstance(tool, dict) else {}
        name = function.get("name")
        if not isinstance(name, str) or (forced is not None and name != forced):
            continue
        job = _job(name)
        if job is not None and offered.get(job, _Offered("")).name != job:
            offered[job] = _Offered(name, _parameters(function.get("parameters")))
    return offered


def _program_jobs(body: dict[str, Any]) -> dict[str, _Offered]:
    """The demo's jobs among the functions `run_code` offers."""
    jobs: dict[str, _Offered] = {}
    for name, parameters in program_tools(body).items():
        job = _job(name)
        if job is not None and job not in jobs:
            jobs[job] = _Offered(name, parameters)
    return jobs


def _job(name: str) -> str | None:
    # The proxy prefixes names with a namespace, so a suffix identifies its example tools.
    known = next((k for k in _KNOWN_TOOLS if name.endswith(k)), None)
    return known or next((job for job, fits in _FITS.items() if fits.search(name)), None)


def _parameters(schema: Any) -> frozenset[str]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return frozenset(properties) if isinstance(properties, dict) else frozenset()


def _arguments(offered: _Offered, call: _Call) -> dict[str, Any]:
    """The call's arguments under the offered tool's own parameter names where they differ:
    a tool with one parameter gets the job's main argument under that parameter's name."""
    main = _MAIN_ARGUMENT.get(call.tool)
    if set(call.arguments) <= offered.parameters or main is None or len(offered.parameters) != 1:
        return call.arguments
    (parameter,) = offered.parameters
    return {parameter: call.arguments[main]}


def _plan(prompt: str, tools: Mapping[str, _Offered]) -> list[_Call]:
    extractors = {
        _WEATHER: _weather_calls,
        _TIME: _time_calls,
        _CALCULATE: _calculate_calls,
        _CONVERT: _convert_calls,
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
            yield _Call(offset, _WEATHER, arguments)


def _time_calls(prompt: str) -> Iterator[_Call]:
    found = False
    for match in _TIME_ASK.finditer(prompt):
        for offset, place in _places(match):
            zone = _CITY_ZONES.get(place.lower()) or _zone_in(place) or place
            found = True
            yield _Call(offset, _TIME, {"timezone": zone})
    if not found:
        zone_match = _IANA_ZONE.search(prompt)
        bare = _BARE_TIME_ASK.search(prompt)
        if zone_match and bare:
            yield _Call(zone_match.start(), _TIME, {"timezone": zone_match.group()})
        elif bare:
            yield _Call(bare.start(), _TIME, {"timezone": "UTC"})


def _calculate_calls(prompt: str) -> Iterator[_Call]:
    ask = _MATH_ASK.search(prompt)
    if ask is None:
        return
    for match in _EXPRESSION.finditer(prompt, ask.end()):
        expression = match.group().strip()
        if _HAS_OPERATION.search(expression):
            normalized = expression.replace("^", "**").replace("\u00d7", "*").replace("\u00f7", "/")
            yield _Call(match.start(), _CALCULATE, {"expression": normalized})


def _convert_calls(prompt: str) -> Iterator[_Call]:
    for match in _CONVERSION_ASK.finditer(prompt):
        source, target = _currency(match.group("source")), _currency(match.group("target"))
        if source and target:
            amount = float(match.group("amount").replace(",", "."))
            arguments = {"amount": amount, "from_currency": source, "to_currency": target}
            yield _Call(match.start(), _CONVERT, arguments)


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


def _wire_call(index: int, offered: _Offered, call: _Call) -> dict[str, Any]:
    arguments = orjson.dumps(_arguments(offered, call)).decode()
    return {
        "index": index,
        "id": f"call_{secrets.token_hex(12)}",
        "type": "function",
        "function": {"name": offered.name, "arguments": arguments},
    }


def _summarize(messages: list[dict[str, Any]]) -> str:
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
        if function.get("name") == RUN_CODE and not _text(result.get("content")).startswith(
            "Error"
        ):
            for name, arguments, content in program_results(_text(result.get("content"))):
                sentences.append(_sentence(name, arguments, content))
            continue
        arguments = _loads(function.get("arguments"))
        sentences.append(
            _sentence(
                str(function.get("name") or result.get("name") or "tool"),
                arguments if isinstance(arguments, dict) else {},
                _text(result.get("content")),
            )
        )
    return " ".join(sentences)


def _sentence(name: str, arguments: dict[str, Any], content: str) -> str:
    known = next((k for k in _KNOWN_TOOLS if name.endswith(k)), None)
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
    _WEATHER: _explain_weather,
    _TIME: _explain_time,
    _CALCULATE: _explain_calculation,
    _CONVERT: _explain_conversion,
}


def _introduction(tools: Mapping[str, _Offered]) -> str:
    examples = {
        _WEATHER: "“What's the weather in Paris?”",
        _TIME: "“What time is it in Tokyo?”",
        _CALCULATE: "“Calculate 2*(3+4)”",
        _CONVERT: "“Convert 100 USD to EUR”",
    }
    offered = [examples[tool] for tool in _KNOWN_TOOLS if tool in tools]
    if offered:
        can = "I call the example tools when you ask for them. Try: " + ", ".join(offered) + "."
    else:
        can = "No example tools were offered to me in this request, so all I can do is say hello."
    return (
        f"Hello! I am {DEMO_MODEL}, Toolwire's built-in demo model: a few rules, not a real "
        f"language model. {can} To use a real model, point Toolwire at an OpenAI-compatible "
        "server: set TOOLWIRE_UPSTREAM_URL (for example http://127.0.0.1:8001/v1) or change "
        "the upstream's base_url in proxy.yaml."
    )


async def _chunks(body: dict[str, Any], message: _Message) -> AsyncGenerator[dict[str, Any], None]:
    envelope = {
        "id": f"chatcmpl-{secrets.token_hex(12)}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model") if isinstance(body.get("model"), str) else DEMO_MODEL,
    }
    deltas = _stream_deltas(message) if body.get("stream") else [_whole_delta(message)]
    for delta, finish_reason in deltas:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        yield envelope | {"choices": [choice]}
        # Yield to the loop so a streamed demo answer interleaves like a real one.
        await asyncio.sleep(0)
    yield envelope | {"choices": [], "usage": _usage(body, message)}


def _whole_delta(message: _Message) -> tuple[dict[str, Any], str]:
    delta: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        delta["tool_calls"] = message.tool_calls
    return delta, message.finish_reason


def _stream_deltas(message: _Message) -> Iterator[tuple[dict[str, Any], str | None]]:
    yield {"role": "assistant", "content": ""}, None
    for word in re.split(r"(?<=\s)(?=\S)", message.content or ""):
        if word:
            yield {"content": word}, None
    for call in message.tool_calls:
        function = call["function"]
        head = call | {"function": {"name": function["name"], "arguments": ""}}
        yield {"tool_calls": [head]}, None
        fragment = {"index": call["index"], "function": {"arguments": function["arguments"]}}
        yield {"tool_calls": [fragment]}, None
    yield {}, message.finish_reason


def _usage(body: dict[str, Any], message: _Message) -> dict[str, int]:
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    prompt = sum(_words(_text(m.get("content"))) for m in messages)
    completion = _words(message.content or "") + sum(
        _words(call["function"]["arguments"]) for call in message.tool_calls
    )
    prompt, completion = max(prompt, 1), max(completion, 1)
    total = prompt + completion
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def _words(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def _text(content: Any) -> str:
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
