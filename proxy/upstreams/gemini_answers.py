"""A plain generateContent answer (Gemini) as Chat chunks, made without llm-rosetta: a whole
answer of one candidate's text parts as one chunk, and a stream of pieces read while they
are a plain text answer's (see `direct_answers`)."""

from __future__ import annotations

from typing import Any

from .base import Chunk
from .direct_answers import PlainStream, chunk_envelope, text_choices

_GEMINI_STOPS = {"STOP": "stop", "MAX_TOKENS": "length"}
_PIECE_KEYS = frozenset(("candidates", "usageMetadata", "modelVersion", "responseId"))
_CANDIDATE_KEYS = frozenset(("content", "index", "finishReason"))
_CONTENT_KEYS = frozenset(("role", "parts"))


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
        "choices": text_choices(texts[0], finish, usage),
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


class GeminiStream(PlainStream):
    """Reads generateContent pieces while they are a plain text answer's."""

    def __init__(self) -> None:
        PlainStream.__init__(self)
        self.ended = False
        """The finishing piece was read (its last chunk is the usage stand-in)."""
        self._answer: tuple[str, str] | None = None
        """The first piece's response id and model version, which every piece must share."""

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
            self._envelope = chunk_envelope(answer_id, model)
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
