"""Plain Anthropic, Gemini and Responses answers as Chat chunks, made without llm-rosetta.

Rosetta reads an answer in two steps (the provider's form to its intermediate one, that to
Chat), under a warnings guard, and a stream through a processor made for it; for a plain
text answer that cost more than the proxy's own work with it. `DirectText` already makes
a stream's text deltas once rosetta made one; this makes the rest of a plain answer:

- a whole answer of text only, with a usage and a plain stop reason, is one chunk;
- a stream is read here event by event while each event is one of a plain text answer's
  (its start, the one text block's (or part's) start, text and end, its stop reason and
  usage, its end).
  Each event rosetta would have read is kept, so at the first other one (thinking, a tool
  call, an error, anything unexpected) a processor is made, reads the kept events (their
  chunks already sent) and goes on from there, in the very state it would be in had it
  read them all along.

Every chunk is the one rosetta makes; tests compare them over generated answers and
event scripts. Usage and finish reasons are still mended by the codecs as before.
"""

from __future__ import annotations

import random
import time
from typing import Any

import orjson

from ..turn.events import Usage
from .base import Chunk, Relayable

_ANTHROPIC_STOPS = {"end_turn": "stop", "max_tokens": "length", "stop_sequence": "stop"}
_GEMINI_STOPS = {"STOP": "stop", "MAX_TOKENS": "length"}
_TEXT_BLOCK = frozenset(("type", "text"))
_MESSAGE_KEYS = frozenset(
    ("id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage")
)
_PIECE_KEYS = frozenset(("candidates", "usageMetadata", "modelVersion", "responseId"))
_CANDIDATE_KEYS = frozenset(("content", "index", "finishReason"))
_CONTENT_KEYS = frozenset(("role", "parts"))
_EMPTY_TEXT_BLOCK = {"type": "text", "text": ""}
_TEXT_DELTA = frozenset(("type", "text"))
_new_dict = dict.__new__
_new_usage = tuple.__new__


def _envelope(answer_id: str, model: str) -> dict[str, Any]:
    """A stream chunk's fields besides its choices, as rosetta writes them."""
    return {"id": answer_id, "object": "chat.completion.chunk", "model": model, "created": 0}


def _message(text: str | None, finish: str, usage: dict[str, Any]) -> list[dict[str, Any]]:
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
    relayed.raw = _chat_answer(model, choice["delta"]["content"], finish, usage.as_dict())
    return relayed


def _chat_answer(model: str, text: str | None, finish: str, usage: dict[str, Any]) -> bytes:
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


def anthropic_relayable(payload: dict[str, Any], model: Any) -> Relayable | None:
    """What `relayable` makes of `anthropic_whole`'s chunk (its usage mended as the codec
    mends it, `anthropic_usage`), made at once for a whole Messages answer of one text
    block asked for a model by name; None for any other (the codec's general steps read
    it). Its bytes and usage are made; its fields are `pending` (`Relayable.fields`), as
    the Chat front, which sends the bytes, reads none."""
    if model.__class__ is not str or not _MESSAGE_KEYS.issuperset(payload):
        return None
    try:
        content = payload["content"]
        stop = payload["stop_reason"]
        raw = payload["usage"]
        if payload["role"] != "assistant" or payload["type"] != "message":
            return None
        if payload["id"].__class__ is not str or payload["model"].__class__ is not str:
            return None
    except KeyError:
        return None
    finish = _ANTHROPIC_STOPS.get(stop) if stop.__class__ is str else None
    if finish is None or payload.get("stop_sequence") is not None or raw.__class__ is not dict:
        return None
    if content.__class__ is not list or len(content) != 1:
        return None
    block = content[0]
    if block.__class__ is not dict or len(block) != 2 or block.get("type") != "text":
        return None
    text = block.get("text")
    if text.__class__ is not str:
        return None
    usage, counted = _anthropic_usage(raw)
    relayed: Relayable = _new_dict(Relayable)
    relayed.raw = _chat_answer(model, text, finish, usage)
    relayed.finish_reason = finish
    relayed.usage = counted
    relayed.pending = (_anthropic_fields, payload, usage)
    return relayed


def _anthropic_usage(raw: dict[str, Any]) -> tuple[dict[str, Any], Usage]:
    """`anthropic_usage`'s Chat usage of an Anthropic usage object, and its `Usage` (what
    `Usage.from_chat` reads of it)."""
    read = raw.get("cache_read_input_tokens")
    read = read if isinstance(read, int) and read > 0 else 0
    prompt = raw.get("input_tokens")
    written = raw.get("cache_creation_input_tokens")
    prompt = (prompt if isinstance(prompt, int) and prompt > 0 else 0) + read
    prompt += written if isinstance(written, int) and written > 0 else 0
    completion = raw.get("output_tokens")
    completion = completion if isinstance(completion, int) and completion > 0 else 0
    total = prompt + completion
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total,
    }
    if read:
        usage["prompt_tokens_details"] = {"cached_tokens": read}
    return usage, _new_usage(Usage, (prompt, completion, total, read, 0))


def _anthropic_fields(chunk: Relayable, payload: dict[str, Any], usage: dict[str, Any]) -> None:
    """`anthropic_whole`'s fields of the answer `anthropic_relayable` checked, in `chunk`."""
    chunk["id"] = payload["id"].removeprefix("msg_")
    chunk["model"] = payload["model"]
    chunk["choices"] = _message(payload["content"][0]["text"], chunk.finish_reason, usage)
    chunk["usage"] = usage


def anthropic_whole(payload: dict[str, Any], usage: Any) -> Chunk | None:
    """The chunk of a whole Messages answer of text blocks only, or None. `usage` is the
    mended usage the codec puts on it (rosetta's is replaced)."""
    if not _MESSAGE_KEYS.issuperset(payload) or not isinstance(usage, dict):
        return None
    answer_id, model, content = payload.get("id"), payload.get("model"), payload.get("content")
    if not isinstance(answer_id, str) or not isinstance(model, str):
        return None
    if payload.get("role") != "assistant" or payload.get("type") != "message":
        return None
    stop = payload.get("stop_reason")
    finish = _ANTHROPIC_STOPS.get(stop) if isinstance(stop, str) else None
    texts = _anthropic_texts(content)
    if finish is None or texts is None or payload.get("stop_sequence") is not None:
        return None
    if len(texts) != 1:  # rosetta joins several with spaces, and reads none its own way
        return None
    return {
        "id": answer_id.removeprefix("msg_"),
        "model": model,
        "choices": _message(texts[0], finish, usage),
        "usage": usage,
    }


def _anthropic_texts(content: Any) -> list[str] | None:
    if not isinstance(content, list):
        return None
    texts = []
    for block in content:
        if not isinstance(block, dict) or block.keys() != _TEXT_BLOCK or block["type"] != "text":
            return None
        if not isinstance(block["text"], str):
            return None
        texts.append(block["text"])
    return texts


def gemini_whole(payload: dict[str, Any], usage: Any) -> Chunk | None:
    """The chunk of a whole generateContent answer of one candidate's text parts, or None.
    `usage` is the mended usage the codec puts on it (rosetta's is replaced)."""
    if not _PIECE_KEYS.issuperset(payload) or not isinstance(usage, dict):
        return None
    answer_id, model = payload.get("responseId"), payload.get("modelVersion")
    if not isinstance(answer_id, str) or not isinstance(model, str):
        return None
    found = _gemini_candidate(payload)
    if found is None:
        return None
    texts, reason = found
    finish = _GEMINI_STOPS.get(reason) if isinstance(reason, str) else None
    if finish is None or len(texts) != 1:  # rosetta joins several with spaces
        return None
    return {
        "id": answer_id,
        "model": model,
        "choices": _message(texts[0], finish, usage),
        "usage": usage,
    }


def _gemini_candidate(payload: dict[str, Any]) -> tuple[list[str], Any] | None:
    """The texts and finish reason of a piece's one candidate (index 0) of text parts.
    (Pieces are parsed JSON, or dicts made of them: exact dicts, lists and strs.)"""
    candidates = payload.get("candidates")
    if candidates.__class__ is not list or len(candidates) != 1:
        return None
    candidate = candidates[0]
    if candidate.__class__ is not dict or not _CANDIDATE_KEYS.issuperset(candidate):
        return None
    if candidate.get("index", 0) != 0:
        return None
    content = candidate.get("content")
    if content.__class__ is not dict or not _CONTENT_KEYS.issuperset(content):
        return None
    if content.get("role", "model") != "model":
        return None
    parts = content.get("parts")
    if parts.__class__ is not list:
        return None
    texts = []
    for part in parts:  # each exactly {"text": str}
        text = part.get("text") if part.__class__ is dict and len(part) == 1 else None
        if text.__class__ is not str:
            return None
        texts.append(text)
    return texts, candidate.get("finishReason")


class _PlainStream:
    """What the stream readers share: the envelope, and the events rosetta would have read.

    A reader's `__init__` calls this one by name: a `super()` object costs about 1k
    instructions, and a reader is made for every stream."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        """The events read here that rosetta would have read, in order."""
        self._envelope: dict[str, Any] | None = None
        self._spoke = False
        """The role went out (with the first text)."""

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


class AnthropicStream(_PlainStream):
    """Reads a Messages stream while it is a plain text answer's."""

    def __init__(self) -> None:
        _PlainStream.__init__(self)
        self._state = "new"

    def event(self, event: dict[str, Any]) -> list[Chunk] | None:
        """The chunks of one event (ping and content_block_stop are the codec's), or None
        when it is not a plain answer's: rosetta reads it, after the kept events."""
        chunks = self._read(event)
        if chunks is not None:
            self.seen.append(event)
        return chunks

    @property
    def texting(self) -> bool:
        """In the answer's one text block, before any text of it was read here."""
        return self._state == "text" and not self._spoke

    def heard(self, text: str) -> None:
        """Read the text delta (of block 0) that stands for text found by its bytes and never
        shown here, as if it had come: what is said next (the role, with the first text, went
        out) and what rosetta reads, should the answer leave the plain shape, are as then."""
        delta = {"type": "text_delta", "text": text}
        self.seen.append({"type": "content_block_delta", "index": 0, "delta": delta})
        self._spoke = True  # as `_text` notes it

    def _read(self, event: dict[str, Any]) -> list[Chunk] | None:
        kind = event.get("type")
        if kind == "message_start" and self._state == "new":
            return self._start(event)
        if kind == "content_block_start" and self._state == "started":
            if event.get("index") != 0 or event.get("content_block") != _EMPTY_TEXT_BLOCK:
                return None
            self._state = "text"
            return []
        if kind == "content_block_delta" and self._state == "text" and event.get("index") == 0:
            delta = event.get("delta")
            if not isinstance(delta, dict) or delta.keys() != _TEXT_DELTA:
                return None
            text = delta["text"]
            if delta["type"] != "text_delta" or not isinstance(text, str) or not text:
                return None
            return [self._text(text)]
        if kind == "message_delta" and self._state == "text" and self._spoke:
            return self._stop(event.get("delta"))
        if kind == "message_stop" and self._state == "finished":
            self._state = "ended"
            return [self._usage()]
        return None

    def _start(self, event: dict[str, Any]) -> list[Chunk] | None:
        message = event.get("message")
        if event.keys() != {"type", "message"} or not isinstance(message, dict):
            return None
        if not _MESSAGE_KEYS.issuperset(message) or message.get("content") != []:
            return None
        answer_id, model, usage = message.get("id"), message.get("model"), message.get("usage")
        if not isinstance(answer_id, str) or not isinstance(model, str):
            return None
        if not isinstance(usage, dict) or not usage:  # so the codec's usage replaces rosetta's
            return None
        self._envelope = _envelope(answer_id, model)
        self._state = "started"
        return []

    def _stop(self, delta: Any) -> list[Chunk] | None:
        if not isinstance(delta, dict) or not delta.keys() <= {"stop_reason", "stop_sequence"}:
            return None
        reason = delta.get("stop_reason")
        finish = _ANTHROPIC_STOPS.get(reason) if isinstance(reason, str) else None
        if finish is None or delta.get("stop_sequence") is not None:
            return None
        self._state = "finished"
        return [self._finish(finish)]


class GeminiStream(_PlainStream):
    """Reads generateContent pieces while they are a plain text answer's."""

    def __init__(self) -> None:
        _PlainStream.__init__(self)
        self.ended = False
        """The finishing piece was read (its last chunk is the usage stand-in)."""
        self._answer: tuple[str, str] | None = None
        """The first piece's response id and model version, which every piece must share."""

    def event(self, piece: dict[str, Any]) -> list[Chunk] | None:
        """The chunks of one piece, or None when it is not a plain answer's: rosetta
        reads it, after the kept pieces."""
        chunks = self._read(piece)
        if chunks is not None:
            self.seen.append(piece)
        return chunks

    def _read(self, piece: dict[str, Any]) -> list[Chunk] | None:
        if self.ended or not _PIECE_KEYS.issuperset(piece):
            return None
        if "candidates" not in piece:
            # Usage alone: rosetta keeps it.
            return [] if self._answer is not None and "usageMetadata" in piece else None
        answer_id, model = piece.get("responseId"), piece.get("modelVersion")
        if answer_id.__class__ is not str or model.__class__ is not str:
            return None
        found = _gemini_candidate(piece)
        if found is None:
            return None
        if self._answer is None:
            self._answer = answer_id, model
            self._envelope = _envelope(answer_id, model)
        elif answer_id != self._answer[0] or model != self._answer[1]:
            return None
        texts, reason = found
        if reason is None:
            return [self._text(text) for text in texts if text] or None
        finish = _GEMINI_STOPS.get(reason) if reason.__class__ is str else None
        usage = piece.get("usageMetadata")
        if finish is None or usage.__class__ is not dict or not usage:
            return None
        if not any(texts):
            if not self._spoke:
                return None
            self.ended = True
            return [self._finish(finish), self._usage()]
        # Text with the finish reason (the hosted service's last piece): its text first, as the
        # codec splits such a piece for rosetta (which drops that text; kept whole, rosetta
        # reads it as the two pieces should a piece after it need rosetta).
        said = [self._text(text) for text in texts if text]
        self.ended = True
        return [*said, self._finish(finish), self._usage()]


def _responses_usage(raw: Any) -> dict[str, Any] | None:
    """Chat usage of a Responses usage object, as rosetta maps it; None for a shape it
    reads otherwise."""
    if not isinstance(raw, dict) or not raw:
        return None
    usage: dict[str, Any] = {
        "prompt_tokens": raw.get("input_tokens") or 0,
        "completion_tokens": raw.get("output_tokens") or 0,
        "total_tokens": raw.get("total_tokens") or 0,
    }
    for source, target, name in (
        ("input_tokens_details", "prompt_tokens_details", "cached_tokens"),
        ("output_tokens_details", "completion_tokens_details", "reasoning_tokens"),
    ):
        details = raw.get(source)
        if details is None:
            continue
        if not isinstance(details, dict):
            return None
        if name in details:
            usage[target] = {name: details[name]}
    return usage


def _responses_text(item: Any, status: str) -> str | None:
    """The text of a finished message item of one plain output text part, or None."""
    if not isinstance(item, dict) or not _ITEM_KEYS.issuperset(item):
        return None
    if item.get("type") != "message" or item.get("role") != "assistant":
        return None
    content = item.get("content")
    if item.get("status") != status or not isinstance(content, list) or len(content) != 1:
        return None
    part = content[0]
    if not isinstance(part, dict) or not _PART_KEYS.issuperset(part):
        return None
    if part.get("type") != "output_text" or part.get("annotations", []) != []:
        return None
    text = part.get("text")
    return text if isinstance(text, str) and not part.get("logprobs") else None


_ITEM_KEYS = frozenset(("type", "id", "role", "status", "content"))
_PART_KEYS = frozenset(("type", "text", "annotations", "logprobs"))
_RESPONSE_READ = ("id", "model", "created_at", "status", "output", "usage")


def _response(payload: Any, status: str) -> tuple[str, str, int] | None:
    """(id, model, created) of a Responses response object of `status`, or None."""
    if not isinstance(payload, dict) or payload.get("status") != status:
        return None
    if payload.get("service_tier") is not None or payload.get("error") is not None:
        return None
    answer_id, model, created = payload.get("id"), payload.get("model"), payload.get("created_at")
    if not isinstance(answer_id, str) or not isinstance(model, str):
        return None
    if created.__class__ is not int:
        return None
    return answer_id.removeprefix("resp_"), model, created


def responses_whole(payload: dict[str, Any]) -> Chunk | None:
    """The chunk of a whole completed response of one message of plain text, or None."""
    found = _response(payload, "completed")
    output = payload.get("output")
    if found is None or not isinstance(output, list) or len(output) != 1:
        return None
    text = _responses_text(output[0], "completed")
    usage = _responses_usage(payload.get("usage"))
    if text is None or usage is None:
        return None
    answer_id, model, _ = found
    return {
        "id": answer_id,
        "model": model,
        "choices": _message(text, "stop", usage),
        "usage": usage,
    }


class ResponsesStream(_PlainStream):
    """Reads a Responses stream while it is a plain text answer's: the response's start,
    one message item with one output text part, its deltas, their ends, the completion."""

    _STEPS = {
        "response.in_progress": ("started", "started"),
        "response.output_text.done": ("text", "text done"),
        "response.content_part.done": ("text done", "part done"),
    }
    """Events that change nothing rosetta writes: (the state they come in, the next)."""

    def __init__(self) -> None:
        _PlainStream.__init__(self)
        self._state = "new"

    def event(self, event: dict[str, Any]) -> list[Chunk] | None:
        """The chunks of one event, or None when it is not a plain answer's: rosetta
        reads it, after the kept events."""
        chunks = self._read(event)
        if chunks is not None:
            self.seen.append(event)
        return chunks

    def _read(self, event: dict[str, Any]) -> list[Chunk] | None:
        kind, state = event.get("type"), self._state
        step = self._STEPS.get(kind)  # type: ignore[arg-type]
        if step is not None:
            if state != step[0] or not self._at_part(event, kind != "response.in_progress"):
                return None
            self._state = step[1]
            return []
        if kind == "response.created" and state == "new":
            return self._start(event.get("response"))
        if kind == "response.output_item.added" and state == "started":
            item = event.get("item")
            if event.get("output_index") != 0 or item != {**_EMPTY_ITEM, "id": _id_of(item)}:
                return None
            self._state = "item"
            return []
        if kind == "response.content_part.added" and state == "item":
            if not self._at_part(event, True) or event.get("part") != _EMPTY_PART:
                return None
            self._state = "text"
            return []
        if kind == "response.output_text.delta" and state == "text":
            text = event.get("delta")
            if not self._at_part(event, True) or not isinstance(text, str) or not text:
                return None
            return None if event.get("logprobs") else [self._text(text)]
        if kind == "response.output_item.done" and state == "part done":
            return self._item_done(event)
        if kind == "response.completed" and state == "item done" and self._spoke:
            return self._end(event.get("response"))
        return None

    @staticmethod
    def _at_part(event: dict[str, Any], part: bool) -> bool:
        """The event is about the first output item's first content part (when `part`)."""
        return not part or (event.get("output_index") == 0 and event.get("content_index") == 0)

    def _item_done(self, event: dict[str, Any]) -> list[Chunk] | None:
        item = event.get("item")
        if event.get("output_index") != 0 or _responses_text(item, "completed") is None:
            return None
        self._state = "item done"
        return []

    def _start(self, response: Any) -> list[Chunk] | None:
        found = _response(response, "in_progress")
        if found is None or response.get("output") != []:
            return None
        answer_id, model, created = found
        self._envelope = {**_envelope(answer_id, model), "created": created}
        self._state = "started"
        return []

    def _end(self, response: Any) -> list[Chunk] | None:
        found = _response(response, "completed")
        output = response.get("output") if found is not None else None
        if not isinstance(output, list) or len(output) != 1:
            return None
        usage = _responses_usage(response.get("usage"))
        if _responses_text(output[0], "completed") is None or usage is None:
            return None
        self._state = "ended"
        return [self._finish("stop"), {**self._usage(), "usage": usage}]


_EMPTY_ITEM = {"type": "message", "role": "assistant", "status": "in_progress", "content": []}
_EMPTY_PART = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}


def _id_of(item: Any) -> Any:
    """An item's id when it is a string (else a value no item equals)."""
    found = item.get("id") if isinstance(item, dict) else None
    return found if isinstance(found, str) else object()
