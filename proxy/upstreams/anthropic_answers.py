"""A plain Messages answer (Anthropic) as Chat chunks, made without llm-rosetta: a whole
answer of one text block as one chunk (or at once as the Chat front's body, for a model asked
by name), and a stream read while it is a plain text answer's (see `direct_answers`)."""

from __future__ import annotations

from typing import Any

from ..turn.events import Usage
from .base import Chunk, Relayable
from .direct_answers import PlainStream, chat_answer, chunk_envelope, text_choices

_ANTHROPIC_STOPS = {"end_turn": "stop", "max_tokens": "length", "stop_sequence": "stop"}
_TEXT_BLOCK = frozenset(("type", "text"))
_MESSAGE_KEYS = frozenset(
    ("id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage")
)
_EMPTY_TEXT_BLOCK = {"type": "text", "text": ""}
_TEXT_DELTA = frozenset(("type", "text"))
_new_dict = dict.__new__
_new_usage = tuple.__new__


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
    relayed.raw = chat_answer(model, text, finish, usage)
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
    chunk["choices"] = text_choices(payload["content"][0]["text"], chunk.finish_reason, usage)
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
        "choices": text_choices(texts[0], finish, usage),
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


class AnthropicStream(PlainStream):
    """Reads a Messages stream while it is a plain text answer's."""

    def __init__(self) -> None:
        PlainStream.__init__(self)
        self._state = "new"

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
        # (ping and content_block_stop are the codec's: they never come here)
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
        self._envelope = chunk_envelope(answer_id, model)
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
