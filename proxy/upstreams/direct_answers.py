"""Plain Anthropic, Gemini and Responses answers as Chat chunks, made without llm-rosetta.

Rosetta reads an answer in two steps (the provider's form to its intermediate one, that to
Chat), under a warnings guard, and a stream through a processor made for it; for a plain
text answer that cost more than the proxy's own work with it. `DirectText` already makes
a stream's text deltas once rosetta made one; the rest of a plain answer is made directly:

- a whole answer of text only, with a usage and a plain stop reason, is one chunk;
- a stream is read event by event while each event is one of a plain text answer's
  (its start, the one text block's (or part's) start, text and end, its stop reason and
  usage, its end).
  Each event rosetta would have read is kept, so at the first other one (thinking, a tool
  call, an error, anything unexpected) a processor is made, reads the kept events (their
  chunks already sent) and goes on from there, in the very state it would be in had it
  read them all along.

Every chunk is the one rosetta makes; tests compare them over generated answers and
event scripts. Usage and finish reasons are still mended by the codecs as before.

This module holds what the three formats share: a chunk's envelope and a whole text
answer's choices, the Chat front's body of a relayed answer (`relayable`), and the stream
readers' base (`PlainStream`). Each format's own reading is in `anthropic_answers`,
`gemini_answers` and `responses_answers`.
"""

from __future__ import annotations

import random
import time
from typing import Any

import orjson

from ..turn.events import Usage
from .base import Chunk, Relayable


def chunk_envelope(answer_id: str, model: str) -> dict[str, Any]:
    """A stream chunk's fields besides its choices, as rosetta writes them."""
    return {"id": answer_id, "object": "chat.completion.chunk", "model": model, "created": 0}


def text_choices(text: str | None, finish: str, usage: dict[str, Any]) -> list[dict[str, Any]]:
    """The choices of a whole text answer, as rosetta's conversion and `as_chunk` make them."""
    delta: dict[str, Any] = {
        "role": "assistant",
        "content": text,
        "refusal": None,
        "annotations": [],
    }
    return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]


def relayable(chunk: Chunk, model: Any) -> Chunk:
    """A whole text answer's chunk (`anthropic_whole`'s or `gemini_whole`'s, its usage
    mended) as `Relayable` for a request of `model`: its `raw` is the body the Chat front
    renders for a turn of this one answer, with a fresh id and the time now as that front
    makes them, so the loop ends such a turn with those bytes (`ToolLoop.relay`), without
    the event stream. The chunk itself is unchanged."""
    if model.__class__ is not str:
        return chunk
    choice = chunk["choices"][0]
    finish = choice["finish_reason"]
    usage = Usage.from_chat(chunk["usage"])
    relayed = Relayable(chunk, finish, usage)
    relayed.raw = chat_answer(model, choice["delta"]["content"], finish, usage.as_dict())
    return relayed


def chat_answer(model: str, text: str | None, finish: str, usage: dict[str, Any]) -> bytes:
    """The Chat front's body for a turn of one text answer: a fresh id, the time now."""
    return orjson.dumps(
        {
            "id": f"chatcmpl-{random.getrandbits(96):024x}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text or None},
                    "finish_reason": finish,
                    "logprobs": None,
                }
            ],
            "usage": usage,
        }
    )


class PlainStream:
    """What the stream readers share: the envelope, and the events rosetta would have read.

    A reader's `__init__` calls this one by name: a `super()` object costs about 1k
    instructions, and a reader is made for every stream."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        """The events read here that rosetta would have read, in order."""
        self._envelope: dict[str, Any] | None = None
        self._spoke = False
        """The role went out (with the first text)."""

    def event(self, event: dict[str, Any]) -> list[Chunk] | None:
        """The chunks of one event, or None when it is not a plain answer's: rosetta reads
        it, after the events kept (`seen`)."""
        chunks = self._read(event)
        if chunks is not None:
            self.seen.append(event)
        return chunks

    def _read(self, event: dict[str, Any]) -> list[Chunk] | None:
        """One event's chunks, or None: each reader's own."""
        raise NotImplementedError

    def _chunk(self, choice: dict[str, Any]) -> Chunk:
        assert self._envelope is not None
        return {"choices": [choice], **self._envelope}

    def _text(self, text: str) -> Chunk:
        delta: dict[str, Any] = {"content": text}
        if not self._spoke:
            delta["role"] = "assistant"
            self._spoke = True
        return self._chunk({"index": 0, "delta": delta, "finish_reason": None})

    def _finish(self, finish: str) -> Chunk:
        return self._chunk({"index": 0, "delta": {}, "finish_reason": finish})

    def _usage(self) -> Chunk:
        """The usage chunk; the codec puts its mended usage in place of this stand-in."""
        assert self._envelope is not None
        return {**self._envelope, "choices": [], "usage": {"total_tokens": 0}}
