"""Drive an upstream adapter directly and fold its chunks as the loop does; convert a Chat
body with llm-rosetta alone, as the adapters' fixes find it."""

from __future__ import annotations

from typing import Any

from proxy.turn.assembler import Answer, Assembler
from proxy.upstreams import Upstream
from proxy.upstreams.conversion import Conversion

UNION = {
    "type": "object",
    "properties": {"x": {"anyOf": [{"type": "number"}, {"type": "array"}, {"type": "null"}]}},
}
"""A parameter schema whose union rosetta collapses."""
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": UNION}}]

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {}}]},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}


def chat(
    stream: bool, messages: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    """A Chat body as the loop sends it."""
    body: dict[str, Any] = {
        "model": "m",
        "messages": messages or [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [WEATHER_TOOL],
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body | extra


async def answer_of(upstream: Upstream, body: dict[str, Any]) -> Answer:
    """The assembled answer of one call."""
    assembler = Assembler()
    async with upstream.complete(body) as chunks:
        async for chunk in chunks:
            assembler.feed(chunk)
    return assembler.finish()


def convert(chat: dict[str, Any], target: str) -> dict[str, Any]:
    """Rosetta's `target` body for `chat` (model `m`), before any fix."""
    return Conversion({"model": "m", **chat}, target, "test").body


def history(first: dict[str, Any], answer: Answer, result: str = "sunny") -> list[dict[str, Any]]:
    """The messages of the next round: the answer's calls, each answered with `result`."""
    from proxy.turn.assembler import assistant_message

    return [
        *first["messages"],
        assistant_message(answer.content, answer.tool_calls, answer.provider),
        *({"role": "tool", "tool_call_id": c.id, "content": result} for c in answer.tool_calls),
    ]
