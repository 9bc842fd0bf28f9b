"""Folds one upstream answer's chunks into a message: content, tool calls, finish, usage.

Tool calls are recognised by their presence, whatever the finish_reason says: vLLM-style
deltas split anywhere and keyed by index, Ollama-style whole calls with no index and
arguments as objects, and calls with no id all end up as complete `ToolCall`s.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

import orjson

from registry import ToolCall

from ..errors import UpstreamError
from ..upstreams.base import PROVIDER_KEY, Relayable
from ..upstreams.relay import Relayed
from .events import ContentDelta, Usage

Delta = ContentDelta
"""What `Assembler.feed` returns: text to forward to the client now."""

_PLAIN_DELTA = frozenset({"role", "content"})
"""A delta with no other field: only its content (and the choice's log-probabilities) count."""
_NO_DELTA: dict[str, Any] = {}
_new_delta = tuple.__new__
"""A `ContentDelta` of all its fields, made without the named tuple's `__new__` frame."""


@dataclass(slots=True)
class Answer:
    """One upstream answer, assembled. Not changed once made, though not frozen: one is made
    per upstream call, and a frozen dataclass sets each field through `object.__setattr__`."""

    content: str
    tool_calls: list[ToolCall]
    finish_reason: str
    usage: Usage | None
    provider: dict[str, Any] | None = None
    """Opaque data the upstream adapter needs back with this message next round (thinking
    signatures and the like), kept under `PROVIDER_KEY` on the assistant message."""
    raw: bytes | None = None
    """The upstream's own bytes, when the answer came whole and `Relayable`."""


@dataclass(slots=True)
class _PartialCall:
    id: str | None = None
    name: str = ""
    fragments: list[str] = field(default_factory=list)
    whole: Any = None

    def absorb(self, entry: dict[str, Any]) -> None:
        if entry.get("id"):
            self.id = entry["id"]
        function = entry.get("function") or {}
        name = function.get("name")
        if name and name != self.name:
            self.name += name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            self.fragments.append(arguments)
        elif arguments is not None:
            self.whole = arguments

    def build(self) -> ToolCall:
        arguments: str | dict[str, Any]
        if self.whole is not None and not "".join(self.fragments).strip():
            arguments = self.whole
        else:
            arguments = "".join(self.fragments)
        return ToolCall(
            id=self.id or f"call_{secrets.token_hex(12)}", name=self.name, arguments=arguments
        )


class Assembler:
    """Consumes the chunks of one upstream answer."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._calls: dict[tuple[int, int], _PartialCall] = {}
        self._by_index: dict[int, tuple[int, int]] = {}
        self._last: tuple[int, int] | None = None
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._provider: dict[str, Any] | None = None
        self._fed = 0
        self._raw: bytes | None = None

    def feed(self, chunk: dict[str, Any]) -> ContentDelta | None:
        """Take one chunk; return the text in it that can go to the client now.

        A delta of no more than a role and content (a stream's role chunk, its finish, most
        text a scanner did not relay) is read by two lookups, not one per field it could
        hold."""
        self._fed += 1
        kind = chunk.__class__
        if kind is Relayed:
            # Text that came unparsed: its content kept for the message, its bytes passed on
            # (read here, not in a method of its own: a call less per run of text).
            relayed: Relayed = chunk  # type: ignore[assignment]
            text = relayed.text
            if relayed.key == "content":
                self._content.append(text)
                return _new_delta(
                    ContentDelta, (text, None, None, None, relayed.raw, relayed.ending)
                )
            return _new_delta(ContentDelta, (None, text, None, None, relayed.raw, relayed.ending))
        if kind is Relayable:
            self._raw = chunk.raw  # type: ignore[attr-defined]
        usage = chunk.get("usage")
        if usage is not None and isinstance(usage, dict):
            self._usage = Usage.from_chat(usage)
        choices = chunk.get("choices")
        if not choices:
            return None
        choice = choices[0]
        finish = choice.get("finish_reason")
        if finish:
            self._finish = str(finish).lower()
        delta = choice.get("delta") or _NO_DELTA
        if delta.keys() <= _PLAIN_DELTA:
            content = delta.get("content")
            if content:
                self._content.append(content)
            logprobs = choice.get("logprobs")
            if logprobs:
                return _rare_delta(content, None, None, logprobs)
            return ContentDelta(content) if content else None
        return self._delta(choice, delta)

    def _delta(self, choice: dict[str, Any], delta: dict[str, Any]) -> ContentDelta | None:
        """`feed` of a delta with more than a role and content: each field it may hold."""
        provider = delta.get(PROVIDER_KEY)
        if isinstance(provider, dict):
            self._provider = {**(self._provider or {}), **provider}
        if delta.get("tool_calls") or delta.get("function_call"):
            self._take_calls(delta)
        content = delta.get("content")
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if content:
            self._content.append(content)
        refusal = delta.get("refusal")
        logprobs = choice.get("logprobs")
        if refusal or logprobs:
            return _rare_delta(content, reasoning, refusal, logprobs)
        if content or reasoning:
            return ContentDelta(content or None, reasoning or None)
        return None

    def _take_calls(self, delta: dict[str, Any]) -> None:
        calls = delta.get("tool_calls")
        if calls:
            for entry in calls:
                self._absorb(entry)
        else:
            self._absorb({"function": delta["function_call"]})

    def _absorb(self, entry: dict[str, Any]) -> None:
        key = self._slot(entry)
        self._last = key
        self._calls.setdefault(key, _PartialCall()).absorb(entry)

    def _slot(self, entry: dict[str, Any]) -> tuple[int, int]:
        """The call an entry belongs to, keyed (index, reuse) so calls sort by index."""
        index = entry.get("index")
        new_id = entry.get("id")
        if not isinstance(index, int):
            # Whole-call chunks (Ollama) carry no index: each is a call of its own unless it
            # only continues the previous call's arguments.
            starts = new_id or (entry.get("function") or {}).get("name")
            if starts or self._last is None:
                return (len(self._calls), 0)
            return self._last
        key = self._by_index.setdefault(index, (index, 0))
        current = self._calls.get(key)
        if current is not None and new_id and current.id not in (None, new_id):
            # Some servers send every parallel call whole under index 0, each with its own id.
            key = (index, key[1] + 1)
            self._by_index[index] = key
        return key

    def finish(self) -> Answer:
        """The assembled answer.

        Raises:
            UpstreamError: a tool call came without a function name.
        """
        calls: list[ToolCall] = []
        if self._calls:  # most answers call nothing: no sorting, no checks
            calls = _unique_ids([self._calls[i].build() for i in sorted(self._calls)])
            if any(not call.name for call in calls):
                raise UpstreamError("upstream sent a tool call without a function name")
        finish = self._finish or "stop"
        if finish == "length":
            # A call cut off by the token limit is never run: its arguments are incomplete.
            calls = []
        elif calls:
            finish = "tool_calls"
        elif finish == "tool_calls":
            finish = "stop"
        raw = self._raw if self._fed == 1 and not calls else None
        return Answer("".join(self._content), calls, finish, self._usage, self._provider, raw)


def _rare_delta(content: Any, reasoning: Any, refusal: Any, logprobs: Any) -> ContentDelta:
    """A delta that carries a refusal or log-probabilities (kept off the common path)."""
    tokens = logprobs.get("content") if isinstance(logprobs, dict) else None
    return ContentDelta(
        content or None,
        reasoning or None,
        refusal if isinstance(refusal, str) and refusal else None,
        tuple(tokens) if isinstance(tokens, list) and tokens else None,
    )


def assistant_message(
    content: str, calls: list[ToolCall], provider: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The assistant message of a round for the history, with the upstream's provider data."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content or None,
        "tool_calls": [wire_call(c) for c in calls],
    }
    if provider:
        message[PROVIDER_KEY] = provider
    return message


def wire_call(call: ToolCall) -> dict[str, Any]:
    """A tool call as it appears in an OpenAI assistant message (arguments as a JSON string)."""
    arguments = call.arguments
    if not isinstance(arguments, str):
        arguments = orjson.dumps(arguments).decode()
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def _unique_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """Give a repeated call id a fresh one, so every call maps to exactly one result."""
    seen: set[str] = set()
    unique = []
    for call in calls:
        if call.id in seen:
            call = ToolCall(
                id=f"call_{secrets.token_hex(12)}", name=call.name, arguments=call.arguments
            )
        seen.add(call.id)
        unique.append(call)
    return unique
