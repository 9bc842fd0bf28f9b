"""Every fix of llm-rosetta 0.13's conversions, for the Anthropic, Gemini and Responses adapters.

The adapters convert Chat bodies with `ConversionPipeline("openai_chat", target)` and the
answers back with its stream processor or `convert_response`. Where rosetta is wrong for the
real services, or drops what a tool round needs, it is mended here and only here; each fix
is a function named for what it mends, with a test in tests/proxy/upstreams/test_rosetta_fixes.py.

Requests (Chat → provider):
- system messages after the first turn are dropped for Anthropic: all are hoisted first;
- Anthropic: adjacent user turns are not merged (one per tool result), empty text blocks
  are sent, `tool_use` gets a `caller` field, `tool_choice: none` keeps
  `disable_parallel_tool_use`;
- Gemini: adjacent user turns are not merged (one per function response), empty text parts
  are sent;
- schemas: unions of several types collapse to their first branch, and Responses gets
  OpenAPI's `nullable`: Anthropic and Responses get the tool's own JSON Schema, Gemini gets
  it as `parametersJsonSchema` when its subset would lose a union;
- Responses: `response_format` lands in `text` without its `format` wrapper; synthetic
  `fc_` item ids are invented for function calls.

Answers (provider → Chat chunks):
- Anthropic thinking blocks lose their signatures, redacted thinking is dropped; Gemini
  `thoughtSignature`s are lost in streams and put back under a field Gemini rejects;
  Responses reasoning items are dropped. All are kept under `PROVIDER_KEY` and put back;
- Anthropic prompt tokens leave out cache reads and writes; Gemini completion tokens leave
  out thoughts and the total is 0 when no candidate tokens came;
- Anthropic `refusal` stops become `stop` (now `content_filter`); an Anthropic `error`
  event is ignored, a failed or incomplete Responses stream ends without a finish (now
  faults, and `length` / `content_filter`); Responses refusal deltas are dropped; a
  response without output items converts to a completion without choices.
"""

from __future__ import annotations

from typing import Any

from .base import PROVIDER_KEY, Chunk

Message = dict[str, Any]
ANTHROPIC_MAX_TOKENS = 4096
"""Anthropic requires `max_tokens`; used when the request has none."""
_SYSTEM_ROLES = ("system", "developer")


# --- Chat side, before conversion -------------------------------------------------------


def take_provider_data(
    messages: list[Message], key: str
) -> tuple[list[Message], dict[str, dict[str, Any]]]:
    """The messages without `PROVIDER_KEY`, and this adapter's entries of it by the first
    tool call id of their assistant message (the one id that survives every conversion)."""
    if not any(PROVIDER_KEY in m for m in messages):
        return messages, {}
    found: dict[str, dict[str, Any]] = {}
    cleaned = []
    for message in messages:
        data = message.get(PROVIDER_KEY)
        if data is None:
            cleaned.append(message)
            continue
        cleaned.append({k: v for k, v in message.items() if k != PROVIDER_KEY})
        calls = message.get("tool_calls") or ()
        entry = data.get(key) if isinstance(data, dict) else None
        if calls and isinstance(calls[0], dict) and isinstance(entry, dict):
            found[str(calls[0].get("id"))] = entry
    return cleaned, found


def hoist_system(body: dict[str, Any]) -> dict[str, Any]:
    """One leading system message holding every system and developer message's text.

    Rosetta keeps only the system messages before the first turn for Anthropic.
    """
    messages = body.get("messages") or []
    system = [m for m in messages if m.get("role") in _SYSTEM_ROLES]
    first_other = next((i for i, m in enumerate(messages) if m.get("role") not in _SYSTEM_ROLES), 0)
    if len(system) <= first_other and all(
        m.get("role") == "system" for m in messages[:first_other]
    ):
        return body
    text = "\n\n".join(filter(None, (_text_of(m.get("content")) for m in system)))
    rest = [m for m in messages if m.get("role") not in _SYSTEM_ROLES]
    return {**body, "messages": [{"role": "system", "content": text}, *rest] if text else rest}


def original_schemas(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The Chat tools' own parameter schemas by name."""
    schemas = {}
    for tool in body.get("tools") or ():
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            schemas[function["name"]] = (
                parameters if isinstance(parameters, dict) else {"type": "object"}
            )
    return schemas


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


# --- Anthropic --------------------------------------------------------------------------


def anthropic_turns(messages: list[Message]) -> list[Message]:
    """Turns as Anthropic accepts them: adjacent same-role turns merged, `tool_result`
    blocks first in their user turn, no empty text blocks, no `caller` on `tool_use`."""
    merged: list[Message] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        blocks = [_anthropic_block(b) for b in content or () if not _empty_text(b)]
        if not blocks:
            continue
        if merged and merged[-1]["role"] == message.get("role"):
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({**message, "content": blocks})
    for message in merged:
        if message["role"] == "user":
            message["content"].sort(key=lambda b: b.get("type") != "tool_result")
    return merged


def _anthropic_block(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "tool_use" and "caller" in block:
        return {k: v for k, v in block.items() if k != "caller"}
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = [b for b in content if not _empty_text(b)]
        if not content:
            return {k: v for k, v in block.items() if k != "content"}
        return {**block, "content": content}
    return block


def _empty_text(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text" and not block.get("text")


def anthropic_tools(tools: list[dict[str, Any]], schemas: dict[str, Any]) -> list[dict[str, Any]]:
    """Tools with their own JSON Schema as `input_schema` (rosetta collapses unions), and
    without an empty description."""
    fixed = []
    for tool in tools:
        tool = {**tool, "input_schema": schemas.get(tool.get("name", ""), tool["input_schema"])}
        if not tool.get("description"):
            tool.pop("description", None)
        fixed.append(tool)
    return fixed


def anthropic_tool_choice(choice: dict[str, Any]) -> dict[str, Any]:
    """`{"type": "none"}` takes no `disable_parallel_tool_use`."""
    return {"type": "none"} if choice.get("type") == "none" else choice


def anthropic_request(body: dict[str, Any], chat: dict[str, Any]) -> dict[str, Any]:
    """Rosetta's Anthropic body, mended (`chat` is the Chat body it came from)."""
    body = {**body, "messages": anthropic_turns(body.get("messages") or [])}
    body.setdefault("max_tokens", ANTHROPIC_MAX_TOKENS)
    if body.get("tools"):
        body["tools"] = anthropic_tools(body["tools"], original_schemas(chat))
    if isinstance(body.get("tool_choice"), dict):
        body["tool_choice"] = anthropic_tool_choice(body["tool_choice"])
    return body


def restore_thinking(messages: list[Message], kept: dict[str, dict[str, Any]]) -> None:
    """Put the thinking blocks of an earlier answer back first in its assistant turn."""
    if not kept:
        return
    for message in messages:
        if message.get("role") != "assistant":
            continue
        first = next((b for b in message["content"] if b.get("type") == "tool_use"), None)
        entry = kept.get(str(first.get("id"))) if first else None
        if entry and entry.get("thinking"):
            message["content"] = [*entry["thinking"], *message["content"]]


class AnthropicThinking:
    """Collects an answer's thinking blocks with their signatures, as rosetta drops them."""

    def __init__(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}

    def observe(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        index = event.get("index")
        if kind == "content_block_start" and isinstance(index, int):
            block = event.get("content_block") or {}
            if block.get("type") == "thinking":
                self._blocks[index] = {"type": "thinking", "thinking": "", "signature": ""}
            elif block.get("type") == "redacted_thinking":
                self._blocks[index] = {"type": "redacted_thinking", "data": block.get("data")}
        elif kind == "content_block_delta" and index in self._blocks:
            delta = event.get("delta") or {}
            if delta.get("type") == "thinking_delta":
                self._blocks[index]["thinking"] += delta.get("thinking") or ""
            elif delta.get("type") == "signature_delta":
                self._blocks[index]["signature"] += delta.get("signature") or ""

    def observe_message(self, message: dict[str, Any]) -> None:
        for index, block in enumerate(message.get("content") or ()):
            if block.get("type") in ("thinking", "redacted_thinking"):
                self._blocks[index] = block

    def provider_data(self) -> dict[str, Any] | None:
        if not self._blocks:
            return None
        return {"anthropic": {"thinking": [self._blocks[i] for i in sorted(self._blocks)]}}


def anthropic_usage(raw: dict[str, Any]) -> dict[str, Any]:
    """Chat usage of an Anthropic usage object: prompt tokens include cache reads and writes
    (Anthropic counts them apart; rosetta leaves them out)."""
    read = _int(raw.get("cache_read_input_tokens"))
    prompt = _int(raw.get("input_tokens")) + read + _int(raw.get("cache_creation_input_tokens"))
    completion = _int(raw.get("output_tokens"))
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if read:
        usage["prompt_tokens_details"] = {"cached_tokens": read}
    return usage


ANTHROPIC_FINISH = {"refusal": "content_filter"}
"""Stop reasons rosetta maps to `stop` that mean something else."""


# --- Gemini -----------------------------------------------------------------------------


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
            if schema is not None and _has_wide_union(schema):
                declaration = {k: v for k, v in declaration.items() if k != "parameters"}
                declaration["parametersJsonSchema"] = schema
            mended.append(declaration)
        fixed.append({"functionDeclarations": mended})
    return fixed


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


class GeminiCalls:
    """Gives id-less function calls an id before rosetta sees them, and keeps each call's
    thought signature (rosetta drops them in streams)."""

    def __init__(self, new_id: Any) -> None:
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
    prompt = _int(raw.get("promptTokenCount"))
    thoughts = _int(raw.get("thoughtsTokenCount"))
    completion = _int(raw.get("candidatesTokenCount")) + thoughts
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": max(_int(raw.get("totalTokenCount")), prompt + completion),
    }
    cached = _int(raw.get("cachedContentTokenCount"))
    if cached:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if thoughts:
        usage["completion_tokens_details"] = {"reasoning_tokens": thoughts}
    return usage


# --- Responses --------------------------------------------------------------------------


def responses_request(body: dict[str, Any], chat: dict[str, Any]) -> dict[str, Any]:
    """Rosetta's Responses body, mended (`chat` is the Chat body it came from)."""
    body = dict(body)
    if body.get("tools"):
        body["tools"] = responses_tools(body["tools"], chat)
    text = body.get("text")
    if isinstance(text, dict) and "format" not in text and "type" in text:
        body["text"] = {"format": responses_format(text)}
    return body


def responses_tools(tools: list[dict[str, Any]], chat: dict[str, Any]) -> list[dict[str, Any]]:
    """Function tools with their own JSON Schema and `strict` (rosetta writes OpenAPI's
    `nullable` into the schema, collapses unions and sets `strict: false`)."""
    originals = {}
    for tool in chat.get("tools") or ():
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict):
            originals[function.get("name")] = function
    fixed = []
    for tool in tools:
        function = originals.get(tool.get("name"))
        if tool.get("type") == "function" and function is not None:
            tool = {**tool, "parameters": function.get("parameters") or {"type": "object"}}
            tool["strict"] = bool(function.get("strict"))
        fixed.append(tool)
    return fixed


def responses_format(chat_format: dict[str, Any]) -> dict[str, Any]:
    """Chat's `response_format` as Responses' `text.format`."""
    if chat_format.get("type") == "json_schema":
        schema = chat_format.get("json_schema") or {}
        return {"type": "json_schema", **schema}
    return {"type": chat_format.get("type")}


def restore_reasoning(items: list[dict[str, Any]], kept: dict[str, dict[str, Any]]) -> None:
    """Function call items get back their own item ids (others lose rosetta's made-up
    `fc_` ids), and the reasoning items of their answer go back in before them."""
    ids: dict[str, str] = {}
    reasoning: dict[str, list[dict[str, Any]]] = {}
    for first, entry in kept.items():
        ids.update(entry.get("item_ids") or {})
        reasoning[first] = entry.get("reasoning") or []
    index = 0
    while index < len(items):
        item = items[index]
        if item.get("type") == "function_call":
            call_id = str(item.get("call_id"))
            item.pop("id", None)
            if call_id in ids:
                item["id"] = ids[call_id]
            before = reasoning.pop(call_id, None)
            if before:
                items[index:index] = before
                index += len(before)
        index += 1


def with_a_choice(completion: dict[str, Any]) -> dict[str, Any]:
    """A completion with one (empty) choice: rosetta gives none for a response without
    output items (an incomplete or filtered one)."""
    if completion.get("choices"):
        return completion
    message = {"role": "assistant", "content": ""}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return {**completion, "choices": [choice]}


def responses_finish(response: dict[str, Any]) -> str:
    """The finish reason of an incomplete response (rosetta ends such streams without one)."""
    details = response.get("incomplete_details") or {}
    return "content_filter" if details.get("reason") == "content_filter" else "length"


# --- shared -----------------------------------------------------------------------------


def with_usage(chunks: list[Chunk], usage: dict[str, Any] | None) -> list[Chunk]:
    """The chunks with their usage replaced by `usage` (when both are there)."""
    if usage is None:
        return chunks
    return [{**c, "usage": usage} if c.get("usage") else c for c in chunks]


def with_finish(chunks: list[Chunk], mapping: dict[str, str], reason: str | None) -> list[Chunk]:
    """The chunks with a finish reason rosetta got wrong replaced."""
    fixed = mapping.get(reason or "")
    if fixed is None:
        return chunks
    out = []
    for chunk in chunks:
        choices = chunk.get("choices")
        if choices and choices[0].get("finish_reason"):
            chunk = {**chunk, "choices": [{**choices[0], "finish_reason": fixed}, *choices[1:]]}
        out.append(chunk)
    return out


def without_rosetta_metadata(chunks: list[Chunk]) -> list[Chunk]:
    """Chunks without rosetta's `_provider_metadata` on tool calls (kept our own way)."""
    for chunk in chunks:
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or choice.get("message") or {}
            for call in delta.get("tool_calls") or ():
                call.pop("_provider_metadata", None)
    return chunks


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0
