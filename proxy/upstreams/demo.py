"""The built-in demo model: a rule-based stand-in that calls the example tools, no server needed.

This module is the upstream (a request in, its chunks out, streamed or whole); which calls it
makes is decided in `demo_calls`, and what it says of their results in `demo_replies`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .base import collect
from .demo_calls import (
    CALCULATE,
    CONVERT,
    KNOWN_TOOLS,
    TIME,
    WEATHER,
    Offered,
    call_arguments,
    offered_tools,
    plan_calls,
    program_jobs,
    wire_call,
)
from .demo_programs import program_call
from .demo_replies import content_text, summarize

__all__ = ["DEMO_MODEL", "DemoUpstream"]

DEMO_MODEL = "toolwire-demo"


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
        return _Message(content=summarize(messages))
    tools = offered_tools(body)
    if messages and messages[-1].get("role") == "user":
        inside = program_jobs(body)
        if inside:
            # Offered run_code: one program runs every call (code mode).
            planned = plan_calls(content_text(messages[-1].get("content")), inside)
            if planned:
                program = [
                    (inside[c.tool].name, call_arguments(inside[c.tool], c)) for c in planned
                ]
                return _Message(tool_calls=[program_call(program)])
        calls = plan_calls(content_text(messages[-1].get("content")), tools)
        if calls:
            wire = [wire_call(index, tools[call.tool], call) for index, call in enumerate(calls)]
            return _Message(tool_calls=wire)
    return _Message(content=_introduction(tools))


def _introduction(tools: Mapping[str, Offered]) -> str:
    examples = {
        WEATHER: "“What's the weather in Paris?”",
        TIME: "“What time is it in Tokyo?”",
        CALCULATE: "“Calculate 2*(3+4)”",
        CONVERT: "“Convert 100 USD to EUR”",
    }
    offered = [examples[tool] for tool in KNOWN_TOOLS if tool in tools]
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
    prompt = sum(_words(content_text(m.get("content"))) for m in messages)
    completion = _words(message.content or "") + sum(
        _words(call["function"]["arguments"]) for call in message.tool_calls
    )
    prompt, completion = max(prompt, 1), max(completion, 1)
    total = prompt + completion
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def _words(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))
