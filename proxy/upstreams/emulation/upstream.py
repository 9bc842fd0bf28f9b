"""The upstream adapter for prompt-emulated tool calling.

`EmulatedUpstream` wraps any `Upstream`: tools go into the prompt on the way in, calls are
parsed out of the text on the way out and re-emitted as standard tool-call deltas, so the
tool loop and the client see native `tool_calls` either way.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from .. import Chunk, Upstream
from .call_ids import NumberedIds, calls_in
from .formats import EmulationFormat
from .parser import Call, Event, Parser, Reasoning, Text
from .prompt import Rewritten, rewrite
from .reasoning import ThinkingParser

log = logging.getLogger("toolwire.emulation")


class EmulatedUpstream:
    """Tool calling through the prompt, for a model or server that has none."""

    def __init__(
        self,
        inner: Upstream,
        fmt: EmulationFormat,
        *,
        strict: bool = False,
        prepare: Callable[[dict[str, Any], EmulationFormat], Rewritten | None] = rewrite,
    ) -> None:
        """`prepare` builds the upstream request: `rewrite` puts the tools into the prompt
        (emulated); `keep_tools` leaves them to the server's chat template (parsed)."""
        self.name = inner.name
        self._inner, self._format, self._strict = inner, fmt, strict
        self._prepare = prepare

    @contextlib.asynccontextmanager
    async def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> AsyncIterator[AsyncIterator[Chunk]]:
        """Open one completion with tools in the prompt; its chunks carry parsed tool calls.

        Raises:
            ProxyError: whatever the inner upstream raises.
        """
        rewritten = self._prepare(body, self._format)
        if rewritten is None:
            async with self._inner.complete(body, headers=headers, deadline=deadline) as chunks:
                yield chunks
            return
        parser = self._format.parser(rewritten.specs, strict=self._strict)
        tags = self._format.think_tags
        if tags is not None and asks_thinking(body):
            # The template may open the block itself (DeepSeek V3.1, R1): start inside it.
            # A family whose versions write other tags lists them (`think_tags_also`: Kimi K3).
            also = getattr(self._format, "think_tags_also", ())
            parser = ThinkingParser(parser, open=tags[0], close=tags[1], started=True, also=also)
        # Numbered after the conversation's earlier calls, for families whose ids count them.
        numbered = NumberedIds(self._format.call_ids, calls_in(body.get("messages")))
        async with self._inner.complete(
            rewritten.body, headers=headers, deadline=deadline
        ) as chunks:
            yield translate(chunks, parser, numbered)

    async def list_models(self) -> list[str]:
        """The inner upstream's models."""
        return await self._inner.list_models()

    async def aclose(self) -> None:
        """Close the inner upstream."""
        await self._inner.aclose()


def asks_thinking(body: dict[str, Any]) -> bool:
    """Whether the request turns the template's thinking on (`chat_template_kwargs`)."""
    kwargs = body.get("chat_template_kwargs")
    if not isinstance(kwargs, dict):
        return False
    return kwargs.get("thinking") is True or kwargs.get("enable_thinking") is True


async def translate(
    chunks: AsyncIterator[Chunk],
    parser: Parser,
    issue: Callable[[str], str],
) -> AsyncIterator[Chunk]:
    """The chunks with their text parsed: content stays content, calls become tool calls
    (with ids from `issue`, given the tool's name)."""
    index = 0
    finished = False
    last: Chunk = {}
    async for chunk in chunks:
        choices = chunk.get("choices")
        if not choices or finished:
            yield chunk
            continue
        last = chunk
        choice = choices[0]
        delta = dict(choice.get("delta") or {})
        text = delta.pop("content", None)
        events = parser.feed(text) if isinstance(text, str) and text else []
        reason = choice.get("finish_reason")
        if reason:
            events += parser.finish(truncated=str(reason).lower() == "length")
            finished = True
        out, index = _apply(delta, events, index, issue)
        if reason and index and str(reason).lower() == "stop":
            reason = "tool_calls"
        yield {**chunk, "choices": [{**choice, "delta": out, "finish_reason": reason}]}
    if not finished:
        out, index = _apply({}, parser.finish(), index, issue)
        if out:
            yield {**last, "choices": [{"index": 0, "delta": out, "finish_reason": None}]}


def _apply(
    delta: dict[str, Any], events: list[Event], index: int, issue: Callable[[str], str]
) -> tuple[dict[str, Any], int]:
    """The delta with the events' text as content, their reasoning as `reasoning_content` and
    their calls as tool-call deltas."""
    thought = "".join(e.text for e in events if isinstance(e, Reasoning))
    if thought:
        delta["reasoning_content"] = (delta.get("reasoning_content") or "") + thought
    text = "".join(e.text for e in events if isinstance(e, Text))
    if text:
        delta["content"] = text
    calls = []
    for event in events:
        if isinstance(event, Call):
            calls.append(
                {
                    "index": index,
                    "id": issue(event.name),
                    "type": "function",
                    "function": {"name": event.name, "arguments": _json(event.arguments)},
                }
            )
            index += 1
    if calls:
        delta["tool_calls"] = [*(delta.get("tool_calls") or []), *calls]
    return delta, index


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
