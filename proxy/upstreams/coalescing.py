"""Merging the text deltas that reach the proxy in one network read.

A loaded proxy (or a fast upstream) reads several stream events at once. Each chunk costs
the loop, the renderer and the client's parser the same however little text it holds, so
consecutive chunks that carry only text of the same kind (content, or reasoning) become one
chunk holding their joined text. Anything else (a role, tool calls, a finish reason,
log-probabilities, usage, provider data, any other field with a value) keeps its chunk and
its place; the text a client assembles is the same, in fewer pieces.
"""

from __future__ import annotations

from .base import Chunk

_TEXT_NAMES = frozenset({"content", "reasoning_content", "reasoning"})
_PLAIN_TOP = frozenset({"id", "object", "created", "model", "choices", "system_fingerprint"})


def coalesce(chunks: list[Chunk]) -> list[Chunk]:
    """`chunks` with each run of same-kind text-only chunks merged into its first chunk."""
    if len(chunks) < 2:
        return chunks
    merged: list[Chunk] = []
    run_key: str | None = None
    parts: list[str] = []
    for chunk in chunks:
        key, text = _text_of(chunk)
        if key is not None and key == run_key:
            parts.append(text)
            continue
        if len(parts) > 1:
            _close(merged, run_key, parts)
        merged.append(chunk)
        run_key = key
        parts = [text] if key is not None else []
    if len(parts) > 1:
        _close(merged, run_key, parts)
    return merged


def _close(merged: list[Chunk], key: str | None, parts: list[str]) -> None:
    """Put the run's joined text into its first chunk (a fresh copy; chunks are not ours)."""
    first = merged[-1]
    choice = first["choices"][0]
    merged[-1] = {
        **first,
        "choices": [{**choice, "delta": {key: "".join(parts)}}],
    }


_NOT_TEXT = (None, "")


def _text_of(chunk: Chunk) -> tuple[str | None, str]:
    """The delta's text field and its text when the chunk carries nothing but text, else
    `(None, "")`.

    Runs once per streamed chunk, so the common shape (`{"content": "..."}` in one choice,
    `usage: null` beside it) is checked with as few steps as it allows.
    """
    for name, value in chunk.items():  # a loop beats the set operations on a 7-key dict
        if value is not None and name not in _PLAIN_TOP:
            return _NOT_TEXT
    choices = chunk.get("choices")
    if choices.__class__ is not list or len(choices) != 1:
        return _NOT_TEXT
    choice = choices[0]
    if (
        choice.__class__ is not dict
        or choice.get("finish_reason")
        or choice.get("logprobs")
        or choice.get("index", 0) != 0
    ):
        return _NOT_TEXT
    delta = choice.get("delta")
    if delta.__class__ is not dict or len(delta) != 1:
        return _NOT_TEXT
    for key, text in delta.items():
        if key in _TEXT_NAMES and text.__class__ is str:
            return key, text
    return _NOT_TEXT
