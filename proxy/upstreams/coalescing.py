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

_TEXT_KEYS = (frozenset({"content"}), frozenset({"reasoning_content"}), frozenset({"reasoning"}))
_PLAIN_TOP = frozenset({"id", "object", "created", "model", "choices", "system_fingerprint"})


def coalesce(chunks: list[Chunk]) -> list[Chunk]:
    """`chunks` with each run of same-kind text-only chunks merged into its first chunk."""
    if len(chunks) < 2:
        return chunks
    merged: list[Chunk] = []
    run_key: str | None = None
    parts: list[str] = []
    for chunk in chunks:
        key = _text_key(chunk)
        if key is not None and key == run_key:
            parts.append(chunk["choices"][0]["delta"][key])
            continue
        _close(merged, run_key, parts)
        merged.append(chunk)
        run_key = key
        parts = [chunk["choices"][0]["delta"][key]] if key is not None else []
    _close(merged, run_key, parts)
    return merged


def _close(merged: list[Chunk], key: str | None, parts: list[str]) -> None:
    """Put the run's joined text into its first chunk (a fresh copy; chunks are not ours)."""
    if key is None or len(parts) < 2:
        return
    first = merged[-1]
    choice = first["choices"][0]
    merged[-1] = {
        **first,
        "choices": [{**choice, "delta": {key: "".join(parts)}}],
    }


def _text_key(chunk: Chunk) -> str | None:
    """The delta's text field when the chunk carries nothing but text, else None."""
    if not chunk.keys() <= _PLAIN_TOP and any(
        value is not None for name, value in chunk.items() if name not in _PLAIN_TOP
    ):
        return None
    choices = chunk.get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        return None
    choice = choices[0]
    if not isinstance(choice, dict) or choice.get("finish_reason") or choice.get("logprobs"):
        return None
    if choice.get("index", 0) != 0:
        return None
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        return None
    keys = delta.keys()
    for allowed in _TEXT_KEYS:
        if keys == allowed:
            (key,) = allowed
            return key if isinstance(delta[key], str) else None
    return None
