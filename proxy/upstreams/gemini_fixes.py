"""llm-rosetta's Gemini conversion, mended for the real `generateContent`.

Requests: adjacent user turns are not merged (one per function response), empty text parts
are sent, and a tool schema with a union of several types keeps only its first branch (it
goes as the full JSON Schema instead).
Answers: function calls without an id get one the proxy makes up (taken off again when they
go back), `thoughtSignature`s are lost in streams and put back under a field Gemini rejects
(they are kept under `PROVIDER_KEY` and put back on their parts), the text of a streamed
piece that also carries the finish reason is lost (it goes first as a piece of its own), and
completion tokens leave out thoughts, with a total of 0 when no candidate tokens came.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from .conversion import Message, original_schemas, tokens


def gemini_turns(contents: list[Message]) -> list[Message]:
    """Contents as Gemini accepts them: adjacent same-role turns merged (a function-call turn
    is followed by one turn with all its responses, first), no empty text parts."""
    merged: list[Message] = []
    for content in contents:
        parts = [p for p in content.get("parts") or () if not _empty_part(p)]
        if not parts:
            continue
        if merged and merged[-1].get("role") == content.get("role"):
            merged[-1]["parts"].extend(parts)
        else:
            merged.append({**content, "parts": parts})
    for content in merged:
        if content.get("role") == "user":
            content["parts"].sort(key=lambda p: "functionResponse" not in p)
    return merged


def _empty_part(part: dict[str, Any]) -> bool:
    return set(part) <= {"text", "thought"} and not part.get("text")


def gemini_tools(tools: list[dict[str, Any]], schemas: dict[str, Any]) -> list[dict[str, Any]]:
    """Declarations whose schema has a union of several types go as `parametersJsonSchema`
    (the full JSON Schema), since rosetta's OpenAPI subset keeps only the first branch."""
    fixed = []
    for tool in tools:
        declarations = tool.get("function_declarations") or tool.get("functionDeclarations")
        if not declarations:
            fixed.append(tool)
            continue
        mended = []
        for declaration in declarations:
            schema = schemas.get(declaration.get("name", ""))
            if schema is not None and _may_have_union(schema) and _has_wide_union(schema):
                declaration = {k: v for k, v in declaration.items() if k != "parameters"}
                declaration["parametersJsonSchema"] = schema
            mended.append(declaration)
        fixed.append({"functionDeclarations": mended})
    return fixed


def _may_have_union(schema: dict[str, Any]) -> bool:
    """False when the schema's JSON names no `anyOf` or `oneOf` and no `type` is a list:
    one scan of its serialisation, instead of walking most schemas (which have none)."""
    try:
        text = orjson.dumps(schema)
    except TypeError:  # not JSON (orjson's error is a TypeError): walk it
        return True
    return b'"anyOf"' in text or b'"oneOf"' in text or b'"type":[' in text


def _has_wide_union(schema: Any) -> bool:
    if isinstance(schema, list):
        return any(_has_wide_union(s) for s in schema)
    if not isinstance(schema, dict):
        return False
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            real = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
            if len(real) > 1:
                return True
    kinds = schema.get("type")
    if isinstance(kinds, list) and len([k for k in kinds if k != "null"]) > 1:
        return True
    return any(_has_wide_union(v) for v in schema.values() if isinstance(v, dict | list))


def gemini_request(body: dict[str, Any], chat: dict[str, Any]) -> dict[str, Any]:
    """Rosetta's Gemini body, mended (`chat` is the Chat body it came from)."""
    body = {**body, "contents": gemini_turns(body.get("contents") or [])}
    if body.get("tools"):
        body["tools"] = gemini_tools(body["tools"], original_schemas(chat))
    return body


def restore_signatures(contents: list[Message], kept: dict[str, dict[str, Any]]) -> None:
    """Put thought signatures back on their `functionCall` parts, and take off the call ids
    the proxy made up for calls Gemini sent without one (from its responses too)."""
    calls: dict[str, dict[str, Any]] = {}
    for entry in kept.values():
        calls.update(entry.get("calls") or {})
    if not calls:
        return
    for content in contents:
        for index, part in enumerate(content["parts"]):
            inner = part.get("functionCall") or part.get("functionResponse")
            known = calls.get(str(inner.get("id"))) if isinstance(inner, dict) else None
            if known is None or inner is None:
                continue
            if known.get("made_up_id"):
                inner = {k: v for k, v in inner.items() if k != "id"}
                key = "functionCall" if "functionCall" in part else "functionResponse"
                part = {**part, key: inner}
            if "functionCall" in part and known.get("thoughtSignature"):
                part = {**part, "thoughtSignature": known["thoughtSignature"]}
            content["parts"][index] = part


def final_text(piece: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A finishing piece's text parts as a piece of their own, and the piece without them;
    None when the piece has no finish reason or no text. Rosetta holds such text back for
    a Gemini client and never gives it to a Chat one: the real service often sends the last
    text with the finish reason (a short answer comes in that one piece)."""
    candidates = piece.get("candidates")
    if not isinstance(candidates, list) or len(candidates) != 1:
        return None
    candidate = candidates[0]
    if not isinstance(candidate, dict) or not candidate.get("finishReason"):
        return None
    content = candidate.get("content")
    if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
        return None
    parts = content["parts"]
    texts = [p for p in parts if _plain_text(p)]
    if not texts:
        return None
    unfinished = {k: v for k, v in candidate.items() if k != "finishReason"}
    text_piece = {k: v for k, v in piece.items() if k != "usageMetadata"}
    text_piece["candidates"] = [{**unfinished, "content": {**content, "parts": texts}}]
    rest = [p for p in parts if not _plain_text(p)]
    finished = {**candidate, "content": {**content, "parts": rest}}
    return text_piece, {**piece, "candidates": [finished]}


def _plain_text(part: Any) -> bool:
    """A part of answer text (not a thought) with text in it."""
    return isinstance(part, dict) and bool(part.get("text")) and not part.get("thought")


class GeminiCalls:
    """Gives id-less function calls an id before rosetta sees them, and keeps each call's
    thought signature (rosetta drops them in streams)."""

    def __init__(self, new_id: Callable[[], str]) -> None:
        self._new_id = new_id
        self._calls: dict[str, dict[str, Any]] = {}

    def observe(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The payload with an id on every function call; signatures are noted."""
        candidates = payload.get("candidates")
        if not isinstance(candidates, list):
            return payload
        for candidate in candidates:
            content = candidate.get("content") if isinstance(candidate, dict) else None
            for part in (content or {}).get("parts") or ():
                call = part.get("functionCall")
                if not isinstance(call, dict):
                    continue
                note: dict[str, Any] = {}
                if not call.get("id"):
                    call["id"] = self._new_id()
                    note["made_up_id"] = True
                if part.get("thoughtSignature"):
                    note["thoughtSignature"] = part["thoughtSignature"]
                if note:
                    self._calls[call["id"]] = note
        return payload

    def provider_data(self) -> dict[str, Any] | None:
        return {"gemini": {"calls": self._calls}} if self._calls else None


def gemini_usage(raw: dict[str, Any]) -> dict[str, Any]:
    """Chat usage of Gemini's `usageMetadata`: completion tokens include thoughts, and the
    total is never 0 when tokens were counted."""
    prompt = tokens(raw.get("promptTokenCount"))
    thoughts = tokens(raw.get("thoughtsTokenCount"))
    completion = tokens(raw.get("candidatesTokenCount")) + thoughts
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": max(tokens(raw.get("totalTokenCount")), prompt + completion),
    }
    cached = tokens(raw.get("cachedContentTokenCount"))
    if cached:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if thoughts:
        usage["completion_tokens_details"] = {"reasoning_tokens": thoughts}
    return usage
