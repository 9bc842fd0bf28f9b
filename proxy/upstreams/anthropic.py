"""Upstreams speaking Anthropic Messages (`format: anthropic`): POST {base_url}/v1/messages."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import orjson

from registry import http1

from ..config import UpstreamConfig
from ..errors import UpstreamError
from . import anthropic_answers, conversion, direct_answers, direct_requests
from . import anthropic_fixes as fixes
from .base import TRACE_HEADERS, Chunk, Fault, provider_chunk, with_trace
from .forwarded import ForwardedHeaders
from .openai_chat import as_chunk, model_ids
from .provider import ProviderUpstream, Request
from .text_scanners import anthropic_text
from .transport import Transport, error_message, overloaded

_TEXT_HEAD = b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"'
_TEXT_TAIL = b'"}}'
"""The bytes around the text of a delta of block 0 (compact, as the Messages API sends it)."""
_CLIENT_READING = ("anthropic-version", "anthropic-beta")
"""Headers saying how to read a request body the client wrote (passed on with it)."""


class AnthropicDialect:
    """Claude's Messages API: the loop's Chat bodies and chunks are converted."""

    def __init__(self, config: UpstreamConfig) -> None:
        self._config = config
        self._url = f"{config.base_url}/v1/messages"
        self.models_url = f"{config.base_url}/v1/models"
        self._tools = direct_requests.anthropic_tools()
        usual, self._credential = self._headers(None)
        self._usual = http1.Headers(usual)
        """The headers of a request that brings none to add (no key of its own to forward,
        no trace context): made once, their head's lines too."""
        self._forwarded = ForwardedHeaders(self._headers, ("x-api-key", "authorization"))
        """The headers with each client key forwarded (no key of the upstream's own)."""

    def request(self, body: dict[str, Any]) -> Request:
        # The loop's body as it is first: a plain one (no provider key, its one system
        # message first) is what taking provider data and hoisting would give back.
        chat: dict[str, Any] = body
        kept: dict[str, dict[str, Any]] = {}
        direct = direct_requests.anthropic_request(body, self._tools)
        if direct is None:
            messages, kept = conversion.take_provider_data(body.get("messages") or [], "anthropic")
            chat = conversion.hoist_system({**body, "messages": messages})
            direct = direct_requests.anthropic_request(chat, self._tools)
        if direct is not None:  # a plain request: no thinking to restore
            converted = conversion.Conversion(chat, "anthropic", self._config.name, direct)
            payload = direct
        else:
            converted = conversion.Conversion(chat, "anthropic", self._config.name)
            payload = fixes.anthropic_request(converted.body, chat)
            fixes.restore_thinking(payload["messages"], kept)
        if payload.get("stream"):
            return Request(self._url, payload, True, functools.partial(_AnthropicCodec, converted))
        return Request(self._url, payload, False, functools.partial(_AnthropicAnswer, converted))

    def headers(self, incoming: Mapping[str, str] | None) -> tuple[dict[str, str], str]:
        if incoming:
            if not self._config.api_key and (
                incoming.get("x-api-key") or incoming.get("authorization")
            ):
                return self._forwarded(incoming)
            for name in TRACE_HEADERS:
                if incoming.get(name):
                    return self._headers(incoming)
        return self._usual, self._credential

    def _headers(self, incoming: Mapping[str, str] | None) -> tuple[dict[str, str], str]:
        headers = {
            "Content-Type": "application/json",
            "anthropic-version": self._config.anthropic_version,
        }
        if self._config.api_key:
            headers["x-api-key"] = self._config.api_key
        elif incoming and incoming.get("x-api-key"):
            headers["x-api-key"] = incoming["x-api-key"]
        elif incoming and incoming.get("authorization"):
            headers["Authorization"] = incoming["authorization"]
        secret = headers.get("x-api-key") or headers.get("Authorization", "")
        return with_trace(headers, incoming), secret

    def models(self, payload: Any) -> list[str]:
        return model_ids(self._config.name, payload)


class AnthropicUpstream(ProviderUpstream):
    """Claude behind the Messages API (`format: anthropic`), which also counts tokens."""

    def __init__(self, config: UpstreamConfig) -> None:
        self._counting = f"{config.base_url}/v1/messages/count_tokens"
        super().__init__(Transport(config), AnthropicDialect(config))

    async def count_tokens(
        self, document: dict[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """The upstream's count (`POST /v1/messages/count_tokens`) of a Messages request as
        the client wrote it, read by the client's `anthropic-version` and `anthropic-beta`.

        Raises:
            UpstreamError, UpstreamTimeoutError, UpstreamStatusError: as `Transport.exchange`.
        """
        shared, credential = self._dialect.headers(headers)
        sent = dict(shared)  # the usual headers are shared: this request adds its own
        for name in _CLIENT_READING:
            if headers and headers.get(name):
                sent[name] = headers[name]
        payload = {k: v for k, v in document.items() if k != "toolwire"}
        exchange = self._transport.exchange(
            self._counting,
            payload,
            sent,
            stream=False,
            codec=_CountCodec,
            credential=credential,
        )
        async with exchange as answer:
            async for counted in answer:
                return counted
        raise UpstreamError(f"upstream {self.name!r} returned no token count")


class _AnthropicCodec:
    """Messages stream events (or a whole message) to Chat chunks: text deltas directly (and,
    once one has been, found by their bytes by the `scanner`, unparsed), the rest through
    rosetta."""

    def __init__(self, converted: conversion.Conversion) -> None:
        self.finished = False
        self.scanner = anthropic_text()
        self._conversion = converted
        self._processor: Any = None
        """Rosetta's stream processor, made by the first event a plain answer has not."""
        self._thinking: fixes.AnthropicThinking | None = None
        """The thinking blocks rosetta drops, kept from that same event on (a plain answer
        has none)."""
        self._plain: anthropic_answers.AnthropicStream | None = anthropic_answers.AnthropicStream()
        self._direct: conversion.DirectText | None = None
        """Made by the first text chunk to learn from (most streams' text comes unparsed)."""
        self._usage: dict[str, Any] = {}
        self._stop: str | None = None

    def event(self, payload: dict[str, Any]) -> list[Chunk]:
        kind = payload.get("type")
        if kind == "content_block_delta":
            # A text delta touches no thinking, usage or stop state: made directly once
            # DirectText knows the envelope. (Events are parsed JSON: exact dicts and strs.)
            delta = payload.get("delta")
            direct = self._direct
            if direct is not None and delta.__class__ is dict and delta.get("type") == "text_delta":
                text = delta.get("text")
                if text.__class__ is str:
                    chunk = direct.chunk(0, text)
                    if chunk is not None:
                        return [chunk]
        if kind == "error":
            raise _fault(payload)
        if kind == "ping" or kind == "content_block_stop":
            # Rosetta makes no chunk of a block's end, and keeps no state for it.
            return []
        if kind == "message_start":
            self._direct = None  # its first text has the role: the envelope is learned again
            self._usage.update((payload.get("message") or {}).get("usage") or {})
        elif kind == "message_delta":
            self._usage.update({k: v for k, v in (payload.get("usage") or {}).items() if v})
            self._stop = (payload.get("delta") or {}).get("stop_reason")
        plain = self._plain
        if plain is not None:
            chunks = self._plainly(plain, kind, payload)
            if chunks is not None:
                return chunks
            self._plain = None
            self._processor = self._conversion.stream(plain.seen)
            self._thinking = fixes.AnthropicThinking()
        return self._converted(kind, payload)

    def _converted(self, kind: Any, payload: dict[str, Any]) -> list[Chunk]:
        """Rosetta's chunks of an event, mended, and the thinking after the answer's end."""
        thinking = self._thinking
        assert thinking is not None  # made with the processor
        if kind == "content_block_start" or kind == "content_block_delta":
            thinking.observe(payload)  # it reads nothing else
        chunks = self._conversion.chunks(self._processor, payload)
        if kind == "message_stop":
            self.finished = True
            data = thinking.provider_data()
            if data is not None:
                chunks.append(provider_chunk(data))
        if not chunks:  # the start of a message or of a block, most often
            return chunks
        self._learn(chunks)
        return self._mended(chunks)

    def _learn(self, chunks: list[Chunk]) -> None:
        """Let `DirectText` learn the envelope of a text chunk among these, made if none is."""
        direct = self._direct
        if direct is None:
            direct = self._direct = conversion.DirectText()
        direct.learn(chunks)

    def _plainly(
        self, plain: anthropic_answers.AnthropicStream, kind: Any, payload: dict[str, Any]
    ) -> list[Chunk] | None:
        """The chunks of an event of a plain text answer (None: the answer is not one, and
        rosetta reads it). Such an answer has no thinking, a plain stop reason and the
        usage of its start: only its end's usage is the codec's to mend."""
        scanner = self.scanner
        if scanner is not None and scanner.first is not None and plain.texting:
            plain.heard(_text(scanner.first))  # its text went out unparsed
        chunks = plain.event(payload)
        if chunks is None:
            return None
        if kind == "content_block_delta":
            self._learn(chunks)
        elif kind == "content_block_start":
            if scanner is not None:  # the text block began: its deltas' shape is known
                scanner.expect(_TEXT_HEAD, _TEXT_TAIL)
        elif kind == "message_stop":
            self.finished = True
            for chunk in chunks:  # the usage chunk, in the reader's stand-in's place
                chunk["usage"] = fixes.anthropic_usage(self._usage)
        return chunks

    def _mended(self, chunks: list[Chunk]) -> list[Chunk]:
        """The chunks with the finish reason and the usage rosetta gets wrong replaced."""
        if self._stop in fixes.ANTHROPIC_FINISH:
            chunks = conversion.with_finish(chunks, fixes.ANTHROPIC_FINISH, self._stop)
        if self._usage:
            for chunk in chunks:
                if chunk.get("usage"):
                    return conversion.with_usage(chunks, fixes.anthropic_usage(self._usage))
        return chunks

    def whole(self, payload: Any) -> list[Chunk]:
        return _whole(self._conversion, payload)


class _AnthropicAnswer:
    """An unstreamed request's codec: its answer is read whole (`whole`), with none of a
    stream's state to make."""

    finished = True

    def __init__(self, converted: conversion.Conversion) -> None:
        self._conversion = converted

    def event(self, payload: dict[str, Any]) -> list[Chunk]:
        raise Fault("upstream streamed an answer asked for whole")

    def whole(self, payload: Any) -> list[Chunk]:
        return _whole(self._conversion, payload)


def _whole(converted: conversion.Conversion, payload: Any) -> list[Chunk]:
    """The chunks of a whole Messages answer (the thinking after the answer's own)."""
    if payload.__class__ is dict:  # parsed JSON: one text block's answer made at once
        relayed = anthropic_answers.anthropic_relayable(payload, converted.model)
        if relayed is not None:
            return [relayed]
    if not isinstance(payload, dict) or payload.get("type") == "error":
        raise _fault(payload)
    usage = payload.get("usage")
    mended = fixes.anthropic_usage(usage) if isinstance(usage, dict) else None
    direct = anthropic_answers.anthropic_whole(payload, mended)
    if direct is not None:
        return [direct_answers.relayable(direct, converted.model)]
    thinking = fixes.AnthropicThinking()
    thinking.observe_message(payload)
    chunk = as_chunk(converted.answer(payload))
    stop = payload.get("stop_reason")
    (chunk,) = conversion.with_finish([chunk], fixes.ANTHROPIC_FINISH, stop)
    if mended is not None:
        chunk["usage"] = mended
    data = thinking.provider_data()
    return [chunk, provider_chunk(data)] if data is not None else [chunk]


class _CountCodec:
    """A count_tokens answer, passed on as it is."""

    finished = True

    def event(self, payload: dict[str, Any]) -> list[Chunk]:
        return [payload]

    def whole(self, payload: Any) -> list[Chunk]:
        if not isinstance(payload, dict) or not isinstance(payload.get("input_tokens"), int):
            raise _fault(payload)
        return [payload]


def _text(body: bytes) -> str:
    """The text of a JSON string body.

    Raises:
        Fault: it is not one (the run of text it began fails alike, if not yet).
    """
    try:
        text: str = orjson.loads(b'"' + body + b'"')
    except orjson.JSONDecodeError as exc:
        raise Fault("upstream sent an event that is not JSON") from exc
    return text


def _fault(payload: Any) -> Fault:
    error = payload.get("error") if isinstance(payload, dict) else None
    message = error_message(payload) or "the upstream reported an error"
    if isinstance(error, dict) and error.get("type") == "overloaded_error":
        return overloaded(message)
    return Fault(message)
