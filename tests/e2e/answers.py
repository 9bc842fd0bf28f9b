"""Helpers for end-to-end tests: read a whole answer, streamed or not, as a user would."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from openai import AsyncOpenAI


@dataclass
class Outcome:
    """What a client got: text, finish reason, tool calls, usage, and the raw chunks."""

    content: str
    finish_reason: str | None
    tool_calls: list[dict[str, Any]]
    usage: dict[str, int] | None
    toolwire: dict[str, Any] | None = None
    chunks: list[Any] = field(default_factory=list)


async def ask(client: AsyncOpenAI, *, stream: bool, **kwargs: Any) -> Outcome:
    """Send one chat request and fold the answer; checks the stream is one response."""
    kwargs.setdefault("model", "fake-model")
    if not stream:
        response = await client.chat.completions.create(stream=False, **kwargs)
        choice = response.choices[0]
        calls = [c.model_dump() for c in choice.message.tool_calls or []]
        extra = choice.message.model_extra or {}
        return Outcome(
            choice.message.content or "",
            choice.finish_reason,
            calls,
            response.usage.model_dump(
                include={"prompt_tokens", "completion_tokens", "total_tokens"}
            )
            if response.usage
            else None,
            extra.get("toolwire"),
        )
    chunks = []
    response = await client.chat.completions.create(stream=True, **kwargs)
    async for chunk in response:
        chunks.append(chunk)
    return fold_chunks(chunks)


def fold_chunks(chunks: list[Any]) -> Outcome:
    """Fold SDK chunks and assert the single-response invariants of SPEC 6.1."""
    assert chunks, "no chunks"
    assert len({c.id for c in chunks}) == 1, "chunks carry several ids"
    roles = [c for c in chunks if c.choices and c.choices[0].delta.role]
    assert len(roles) == 1, "expected exactly one role chunk"
    finishes = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert len(finishes) <= 1, f"several finish_reasons: {finishes}"
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    calls: dict[int, dict[str, Any]] = {}
    toolwire = None
    for c in chunks:
        if not c.choices:
            continue
        delta = c.choices[0].delta
        for tc in delta.tool_calls or []:
            slot = calls.setdefault(
                tc.index, {"id": None, "function": {"name": "", "arguments": ""}}
            )
            slot["id"] = tc.id or slot["id"]
            slot["function"]["name"] += tc.function.name or ""
            slot["function"]["arguments"] += tc.function.arguments or ""
        extra = delta.model_extra or {}
        if c.choices[0].finish_reason and "toolwire" in extra:
            toolwire = extra["toolwire"]
    usage_chunks = [c for c in chunks if c.usage]
    assert len(usage_chunks) <= 1
    usage = (
        usage_chunks[0].usage.model_dump(
            include={"prompt_tokens", "completion_tokens", "total_tokens"}
        )
        if usage_chunks
        else None
    )
    return Outcome(
        content,
        finishes[0] if finishes else None,
        [calls[i] for i in sorted(calls)],
        usage,
        toolwire,
        chunks,
    )


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool messages of an upstream request body."""
    return [m for m in body["messages"] if m["role"] == "tool"]


def tool_names(body: dict[str, Any]) -> list[str]:
    """Names of the tools injected into an upstream request body."""
    return [t["function"]["name"] for t in body.get("tools") or []]
