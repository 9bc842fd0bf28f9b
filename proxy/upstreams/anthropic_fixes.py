"""llm-rosetta's Anthropic conversion, mended for the real Messages API.

Requests: adjacent user turns are not merged (one per tool result), empty text blocks and
empty tool descriptions are sent, `tool_use` gets a `caller` field, `tool_choice: none`
keeps `disable_parallel_tool_use`, the required `max_tokens` may be missing, and the tools'
schemas lose their unions.
Answers: thinking blocks lose their signatures and redacted thinking is dropped (both are
kept under `PROVIDER_KEY` and put back), prompt tokens leave out cache reads and writes,
`refusal` stops become `stop` (now `content_filter`), and an `error` event is ignored (the
adapter's codec makes it a fault).
"""

from __future__ import annotations

from typing import Any

from .conversion import Message, original_schemas, tokens

ANTHROPIC_MAX_TOKENS = 4096
"""Anthropic requires `max_tokens`; used when the request has none."""


def anthropic_turns(messages: list[Message]) -> list[Message]:
    """Turns as Anthropic accepts them: adjacent same-role turns merged, `tool_result`
    blocks first in their user turn, no empty text blocks, no `caller` on `tool_use`."""
    merged: list[Message] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        blocks = [_anthropic_block(b) for b in content or () if not _empty_text(b)]
        if not blocks:
            continue
        if merged and merged[-1]["role"] == message.get("role"):
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({**message, "content": blocks})
    for message in merged:
        if message["role"] == "user":
            message["content"].sort(key=lambda b: b.get("type") != "tool_result")
    return merged


def _anthropic_block(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "tool_use" and "caller" in block:
        return {k: v for k, v in block.items() if k != "caller"}
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = [b for b in content if not _empty_text(b)]
        if not content:
            return {k: v for k, v in block.items() if k != "content"}
        return {**block, "content": content}
    return block


def _empty_text(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text" and not block.get("text")


def anthropic_tools(tools: list[dict[str, Any]], schemas: dict[str, Any]) -> list[dict[str, Any]]:
    """Tools with their own JSON Schema as `input_schema` (rosetta collapses unions), and
    without an empty description."""
    fixed = []
    for tool in tools:
        tool = {**tool, "input_schema": schemas.get(tool.get("name", ""), tool["input_schema"])}
        if not tool.get("description"):
            tool.pop("description", None)
        fixed.append(tool)
    return fixed


def anthropic_tool_choice(choice: dict[str, Any]) -> dict[str, Any]:
    """`{"type": "none"}` takes no `disable_parallel_tool_use`."""
    return {"type": "none"} if choice.get("type") == "none" else choice


def anthropic_request(body: dict[str, Any], chat: dict[str, Any]) -> dict[str, Any]:
    """Rosetta's Anthropic body, mended (`chat` is the Chat body it came from)."""
    body = {**body, "messages": anthropic_turns(body.get("messages") or [])}
    body.setdefault("max_tokens", ANTHROPIC_MAX_TOKENS)
    if body.get("tools"):
        body["tools"] = anthropic_tools(body["tools"], original_schemas(chat))
    if isinstance(body.get("tool_choice"), dict):
        body["tool_choice"] = anthropic_tool_choice(body["tool_choice"])
    return body


def restore_thinking(messages: list[Message], kept: dict[str, dict[str, Any]]) -> None:
    """Put the thinking blocks of an earlier answer back first in its assistant turn."""
    if not kept:
        return
    for message in messages:
        if message.get("role") != "assistant":
            continue
        first = next((b for b in message["content"] if b.get("type") == "tool_use"), None)
        entry = kept.get(str(first.get("id"))) if first else None
        if entry and entry.get("thinking"):
            message["content"] = [*entry["thinking"], *message["content"]]


class AnthropicThinking:
    """Collects an answer's thinking blocks with their signatures, as rosetta drops them."""

    def __init__(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}

    def observe(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        index = event.get("index")
        if kind == "content_block_start" and isinstance(index, int):
            block = event.get("content_block") or {}
            if block.get("type") == "thinking":
                self._blocks[index] = {"type": "thinking", "thinking": "", "signature": ""}
            elif block.get("type") == "redacted_thinking":
                self._blocks[index] = {"type": "redacted_thinking", "data": block.get("data")}
        elif kind == "content_block_delta" and index in self._blocks:
            delta = event.get("delta") or {}
            if delta.get("type") == "thinking_delta":
                self._blocks[index]["thinking"] += delta.get("thinking") or ""
            elif delta.get("type") == "signature_delta":
                self._blocks[index]["signature"] += delta.get("signature") or ""

    def observe_message(self, message: dict[str, Any]) -> None:
        for index, block in enumerate(message.get("content") or ()):
            if block.get("type") in ("thinking", "redacted_thinking"):
                self._blocks[index] = block

    def provider_data(self) -> dict[str, Any] | None:
        if not self._blocks:
            return None
        return {"anthropic": {"thinking": [self._blocks[i] for i in sorted(self._blocks)]}}


def anthropic_usage(raw: dict[str, Any]) -> dict[str, Any]:
    """Chat usage of an Anthropic usage object: prompt tokens include cache reads and writes
    (Anthropic counts them apart; rosetta leaves them out)."""
    read = tokens(raw.get("cache_read_input_tokens"))
    prompt = tokens(raw.get("input_tokens")) + read + tokens(raw.get("cache_creation_input_tokens"))
    completion = tokens(raw.get("output_tokens"))
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if read:
        usage["prompt_tokens_details"] = {"cached_tokens": read}
    return usage


ANTHROPIC_FINISH = {"refusal": "content_filter"}
"""Stop reasons rosetta maps to `stop` that mean something else."""
