"""A plain Responses answer (OpenAI) as Chat chunks, made without llm-rosetta: a whole
completed response of one message of plain text as one chunk, and a stream read while it is
a plain text answer's (see `direct_answers`)."""

from __future__ import annotations

from typing import Any

from .base import Chunk
from .direct_answers import PlainStream, chunk_envelope, text_choices


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
        "choices": text_choices(text, "stop", usage),
        "usage": usage,
    }


class ResponsesStream(PlainStream):
    """Reads a Responses stream while it is a plain text answer's: the response's start,
    one message item with one output text part, its deltas, their ends, the completion."""

    _STEPS = {
        "response.in_progress": ("started", "started"),
        "response.output_text.done": ("text", "text done"),
        "response.content_part.done": ("text done", "part done"),
    }
    """Events that change nothing rosetta writes: (the state they come in, the next)."""

    def __init__(self) -> None:
        PlainStream.__init__(self)
        self._state = "new"

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
        self._envelope = {**chunk_envelope(answer_id, model), "created": created}
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
