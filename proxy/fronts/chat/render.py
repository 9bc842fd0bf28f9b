"""Renders a turn's events as one OpenAI response: SSE chunks or one JSON body."""

from __future__ import annotations

from random import getrandbits
from time import time
from typing import Any, NamedTuple

import orjson

from ... import sse
from ...errors import ProxyError
from ...turn.assembler import Usage, wire_call
from ...turn.events import (
    ContentDelta,
    Finished,
    LoopEvent,
    ToolProgress,
    ToolsFinished,
    ToolsStarted,
)

_new_meta = tuple.__new__


class ResponseMeta(NamedTuple):
    """What every chunk of one response shares."""

    model: str
    id: str
    created: int

    @classmethod
    def new(cls, model: str) -> ResponseMeta:
        """A fresh id and the time now."""
        # `tuple.__new__`: the named tuple's own `__new__` is a Python frame more; the id's
        # 24 hex digits as the 12 bytes' hex, at half the cost of a format.
        return _new_meta(
            cls, (model, "chatcmpl-" + getrandbits(96).to_bytes(12).hex(), int(time()))
        )


class ChatStreamRenderer:
    """Turns events into `chat.completion.chunk` SSE frames of a single response."""

    __slots__ = ("_encoder", "_include_usage", "_meta", "_tool_events")

    def __init__(self, meta: ResponseMeta, include_usage: bool, tool_events: bool) -> None:
        self._meta = meta
        self._include_usage = include_usage
        self._tool_events = tool_events
        model, response_id, created = meta  # unpacked: each field by name is a lookup
        self._encoder = sse.ChoiceEncoder.chunks(response_id, created, model)

    def start(self) -> bytes:
        """The role chunk that opens the response."""
        return self._encoder.opening()

    def frames(self, event: LoopEvent) -> list[bytes]:
        """The SSE frames for one event (possibly none)."""
        if isinstance(event, ContentDelta):
            if event.raw is not None:  # the upstream's escaped text, spliced in unparsed
                return [self._encoder.text(event.raw, event.content is None)]
            delta: dict[str, Any] = {}
            if event.content is not None:
                delta["content"] = event.content
            if event.reasoning is not None:
                delta["reasoning_content"] = event.reasoning
            if event.refusal is not None:
                delta["refusal"] = event.refusal
            if event.logprobs is not None:
                return [self._encoder.frame(delta, logprobs={"content": list(event.logprobs)})]
            return [self._encoder.frame(delta)]
        if isinstance(event, ToolsStarted | ToolsFinished):
            return self._tool_event(event)
        if isinstance(event, ToolProgress):
            return (
                [self._encoder.frame({"toolwire": {"progress": event.as_dict()}})]
                if self._tool_events
                else []
            )
        return self._finish(event)

    def error(self, exc: ProxyError) -> list[bytes]:
        """Frames that end a stream that failed after its first byte."""
        return [sse.encode(exc.body()), sse.DONE]

    def _finish(self, event: Finished) -> list[bytes]:
        frames = []
        if event.tool_calls:
            calls = [{"index": i, **wire_call(c)} for i, c in enumerate(event.tool_calls)]
            frames.append(self._encoder.frame({"tool_calls": calls}))
        if event.approvals or event.questions or event.stopped_by is not None:
            # Toolwire's own fields (`vendor_fields`, which holds something only then).
            last = {"toolwire": event.vendor_fields()}
            frames.append(self._encoder.frame(last, event.finish_reason))
        else:
            frames.append(self._encoder.ending(event.finish_reason))
        if self._include_usage:
            frames.append(self._usage(event.usage))
        frames.append(sse.DONE)
        return frames

    def _tool_event(self, event: ToolsStarted | ToolsFinished) -> list[bytes]:
        if not self._tool_events:
            return [sse.comment("tools running")] if isinstance(event, ToolsStarted) else []
        if isinstance(event, ToolsStarted):
            info: dict[str, Any] = {"tool_calls": [wire_call(c) for c in event.calls]}
        else:
            results: list[dict[str, Any]] = []
            for r in event.results:
                entry = {"tool_call_id": r.call_id, "content": r.content, "is_error": r.is_error}
                if (spilled := event.spilled.get(r.call_id)) is not None:
                    entry["spilled"] = spilled.as_dict()  # kept whole: content is its preview
                results.append(entry)
            info = {"tool_results": results}
        return [self._encoder.frame({"toolwire": info})]

    def _usage(self, usage: Usage) -> bytes:
        meta = self._meta
        return sse.encode(
            {
                "id": meta.id,
                "object": "chat.completion.chunk",
                "created": meta.created,
                "model": meta.model,
                "choices": [],
                "usage": usage.as_dict(),
            }
        )


class ChatJsonRenderer:
    """Folds events into one `chat.completion` body (for `model`; its id and time made when
    it is rendered, or given as `meta`)."""

    def __init__(self, meta: ResponseMeta | str) -> None:
        self._meta = meta
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        self._logprobs: list[dict[str, Any]] = []
        self._finished: Finished | None = None

    def feed(self, event: LoopEvent) -> None:
        if isinstance(event, ContentDelta):
            if event.content:
                self._content.append(event.content)
            if event.reasoning:
                self._reasoning.append(event.reasoning)
            if event.refusal:
                self._refusal.append(event.refusal)
            if event.logprobs:
                self._logprobs.extend(event.logprobs)
        elif isinstance(event, Finished):
            self._finished = event

    def encoded(self) -> bytes:
        """The whole answer, serialised: the upstream's own bytes when the turn relays them."""
        done = self._finished
        if done is not None and done.relay is not None:
            return done.relay
        return orjson.dumps(self.body())

    def body(self) -> dict[str, Any]:
        """The whole answer.

        Raises:
            RuntimeError: no `Finished` event was fed.
        """
        if self._finished is None:
            raise RuntimeError("the turn ended without a Finished event")
        done = self._finished
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._content) or None}
        if self._reasoning:
            message["reasoning_content"] = "".join(self._reasoning)
        if self._refusal:
            message["refusal"] = "".join(self._refusal)
        if done.tool_calls:
            message["tool_calls"] = [wire_call(c) for c in done.tool_calls]
        if vendor := done.vendor_fields():
            message["toolwire"] = vendor
        meta = self._meta
        if isinstance(meta, str):
            meta = self._meta = ResponseMeta.new(meta)
        return {
            "id": meta.id,
            "object": "chat.completion",
            "created": meta.created,
            "model": meta.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": done.finish_reason,
                    "logprobs": {"content": self._logprobs} if self._logprobs else None,
                }
            ],
            "usage": done.usage.as_dict(),
        }
