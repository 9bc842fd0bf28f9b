"""llm-rosetta at the adapters' edge: a Chat body to a provider's, a provider's answer back.

Rosetta reports dropped parameters as Python warnings, and raises its own or builtin errors
on input it cannot read; both are handled here, in the one module that calls it.

Where rosetta 0.13 is wrong for the real services, or drops what a tool round needs, the
converting adapters mend it; each fix is a function named for what it mends, with a test.
Each provider's own fixes sit beside its dialect (`anthropic_fixes`, `gemini_fixes`,
`responses_fixes`); the ones they share are here:
- the provider extension key (`PROVIDER_KEY`) is taken off the messages, each adapter's
  entries kept to be put back in the provider's own form;
- system messages after the first turn are dropped for Anthropic: all are hoisted first;
- the tools' own parameter schemas are looked up, as rosetta collapses unions;
- usage and finish reasons rosetta gets wrong are replaced, and its `_provider_metadata`
  on tool calls is removed from the chunks.
"""

from __future__ import annotations

import functools
import logging
import warnings
from typing import Any

from llm_rosetta import ConversionPipeline, get_converter_for_provider

from ..errors import BadRequestError
from .base import PROVIDER_KEY, Chunk, Fault

log = logging.getLogger("toolwire.upstream")
Message = dict[str, Any]
_SYSTEM_ROLES = ("system", "developer")


@functools.cache
def _without_self_checks(*providers: str) -> None:
    """Turn off rosetta's re-validation of its own intermediate form in the converters its
    pipelines share: the input is the loop's own Chat body, and the check cost more than
    the rest of a conversion."""
    for provider in providers:
        get_converter_for_provider(provider).validate_output = False


class Conversion:
    """One request's conversion to `target` and its answer's conversion back to Chat."""

    def __init__(
        self,
        chat: dict[str, Any],
        target: str,
        upstream: str,
        body: dict[str, Any] | None = None,
    ) -> None:
        """Convert `chat`; the provider body is `self.body`.

        With `body`, the body rosetta gives for a plain `chat` (made directly: see
        `direct_requests`), rosetta converts nothing unless the answer needs it; see
        `pipeline`.

        Raises:
            BadRequestError: rosetta cannot convert the request.
        """
        self.model = chat.get("model")
        """The model the request asked for."""
        self._target = target
        self._upstream = upstream
        self._pipeline: ConversionPipeline | None = None
        self.body: dict[str, Any] = self._convert(chat) if body is None else body

    def _convert(self, chat: dict[str, Any]) -> dict[str, Any]:
        """Rosetta's conversion of `chat`, which readies the pipeline for the answer.

        Raises:
            BadRequestError: rosetta cannot convert the request.
        """
        _without_self_checks("openai_chat", self._target)
        pipeline = ConversionPipeline("openai_chat", self._target)
        with warnings.catch_warnings(record=True) as dropped:
            warnings.simplefilter("always")
            try:
                body: dict[str, Any] = pipeline.convert_request(chat)
            except Exception as exc:  # rosetta's ConversionError and what its validators raise
                message = f"the request cannot be converted for upstream {self._upstream!r}: {exc}"
                raise BadRequestError(message) from exc
        for warning in dropped:
            log.debug("upstream %s: %s", self._upstream, warning.message)
        self._pipeline = pipeline
        return body

    @property
    def pipeline(self) -> ConversionPipeline:
        """Rosetta's pipeline, ready to read the answer.

        Rosetta reads an answer in the context its conversion of the request left: for a
        Chat request that is its options and the custom tools it downgraded, none of which
        a plain request (text turns, sampling fields, function tools) sets. So for a body
        made directly, a request of the model alone readies it, at a fifth of the cost of
        converting the request again (tests compare the chunks with a full conversion's).

        Raises:
            Fault: rosetta cannot convert even that.
        """
        if self._pipeline is None:
            try:
                self._convert({"model": self.model, "messages": []})
            except BadRequestError as exc:
                raise Fault(exc.message) from exc
        assert self._pipeline is not None
        return self._pipeline

    def stream(self, read: list[dict[str, Any]] | tuple[()] = ()) -> Any:
        """A fresh stream processor: its `process_chunk(event)` gives Chat chunks. It reads
        `read` first (events whose chunks were made directly, see `direct_answers`), so it
        is in the state it would be in had it read them as they came; their chunks are
        dropped.

        Raises:
            Fault: rosetta cannot read one of them.
        """
        processor = self.pipeline.create_stream_processor()
        for event in read:
            self.chunks(processor, event)
        return processor

    def chunks(self, processor: Any, event: dict[str, Any]) -> list[Chunk]:
        """The Chat chunks of one provider stream event.

        Raises:
            Fault: rosetta cannot read the event.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return list(processor.process_chunk(event))
            except Exception as exc:  # rosetta's own errors and builtin ones alike
                message = f"an event of upstream {self._upstream!r} is unusable: {exc}"
                raise Fault(message) from exc

    def answer(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The `chat.completion` of a whole provider answer.

        Raises:
            Fault: rosetta cannot read the answer.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return dict(self.pipeline.convert_response(payload))
            except Exception as exc:  # rosetta's own errors and builtin ones alike
                raise Fault(
                    f"the answer of upstream {self._upstream!r} is unusable: {exc}"
                ) from exc


_TEXT_CHUNK_KEYS = frozenset(("choices", "id", "object", "model", "created"))


class DirectText:
    """One answer stream's plain text deltas as Chat chunks, made without rosetta.

    Rosetta's per-event conversion (provider event, its intermediate event, a Chat chunk,
    under a warnings guard) costs more than everything else the proxy does with a text
    delta. Once rosetta has made one plain text chunk of the stream (not the first, which
    also carries the role), every later one differs from it only in its text and choice
    index, so those are made here from its envelope. The adapters use it for events that
    hold text and nothing else; everything else still goes through rosetta.
    """

    __slots__ = ("_envelope",)

    def __init__(self) -> None:
        self._envelope: dict[str, Any] | None = None

    def learn(self, chunks: list[Chunk]) -> None:
        """Note the envelope (id, object, model, created) of a plain text chunk rosetta made."""
        if self._envelope is not None:
            return
        for chunk in chunks:
            choices = chunk.get("choices")
            if chunk.keys() != _TEXT_CHUNK_KEYS or not isinstance(choices, list):
                continue
            if len(choices) != 1 or not isinstance(choices[0], dict):
                continue
            choice = choices[0]
            delta = choice.get("delta")
            if (
                choice.keys() == {"index", "delta", "finish_reason"}
                and choice["finish_reason"] is None
                and isinstance(delta, dict)
                and delta.keys() == {"content"}
            ):
                self._envelope = {k: chunk[k] for k in ("id", "object", "model", "created")}
                return

    @property
    def learned(self) -> bool:
        """Whether an envelope was learnt: `chunk` makes chunks."""
        return self._envelope is not None

    def chunk(self, index: Any, text: str) -> Chunk | None:
        """The Chat chunk of a text delta of choice `index`; None until one was learnt."""
        envelope = self._envelope
        if envelope is None:
            return None
        choice = {"index": index, "delta": {"content": text}, "finish_reason": None}
        return {"choices": [choice], **envelope}


# --- Chat side, before conversion -------------------------------------------------------


def take_provider_data(
    messages: list[Message], key: str
) -> tuple[list[Message], dict[str, dict[str, Any]]]:
    """The messages without `PROVIDER_KEY`, and this adapter's entries of it by the first
    tool call id of their assistant message (the one id that survives every conversion)."""
    for message in messages:  # a loop, not `any`: no generator for the usual none
        if PROVIDER_KEY in message:
            break
    else:
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
    if _hoisted(messages):
        return body
    system = [m for m in messages if m.get("role") in _SYSTEM_ROLES]
    text = "\n\n".join(filter(None, (_text_of(m.get("content")) for m in system)))
    rest = [m for m in messages if m.get("role") not in _SYSTEM_ROLES]
    return {**body, "messages": [{"role": "system", "content": text}, *rest] if text else rest}


def _hoisted(messages: list[Message]) -> bool:
    """Whether the system messages are already as `hoist_system` makes them: none, or only
    `system` ones, all before the first other message (one loop: the usual request)."""
    leading = True
    for message in messages:
        role = message.get("role")
        if role == "system" or role == "developer":
            if not leading or role == "developer":
                return False
        else:
            leading = False
    return not leading or not messages


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


# --- Chat side, after conversion --------------------------------------------------------


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


def tokens(value: Any) -> int:
    """A provider's token count, 0 when it is missing or not a positive integer."""
    return value if isinstance(value, int) and value > 0 else 0
