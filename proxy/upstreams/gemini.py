"""Upstreams speaking Gemini's `generateContent` (`format: gemini`).

POST {base_url}/v1beta/models/{model}:generateContent, or :streamGenerateContent?alt=sse
(data-only events, CRLF-separated) when streaming; the key goes in `x-goog-api-key`.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import orjson

from ..config import UpstreamConfig
from ..errors import UpstreamError
from . import conversion, direct_answers, direct_requests, gemini_answers
from . import gemini_fixes as fixes
from .base import Chunk, Fault, provider_chunk, with_trace
from .forwarded import ForwardedHeaders
from .openai_chat import as_chunk
from .provider import ProviderUpstream, Request
from .text_scanners import gemini_text
from .transport import Transport, error_message, overloaded


class GeminiDialect:
    """The Generative Language API: the loop's Chat bodies and chunks are converted."""

    def __init__(self, config: UpstreamConfig) -> None:
        self._config = config
        self.models_url = f"{config.base_url}/v1beta/models"
        self._tools = direct_requests.gemini_tools()
        self._urls: dict[tuple[str, bool], str] = {}
        """Each model's URL, streamed and not (made once: quoting costs more than the rest
        of a plain request's URL)."""
        self._forwarded = ForwardedHeaders(self._headers, ("x-goog-api-key", "authorization"))
        """The headers for each client key (the upstream's own key, if it has one, instead)."""

    def request(self, body: dict[str, Any]) -> Request:
        messages, kept = conversion.take_provider_data(body.get("messages") or [], "gemini")
        chat = conversion.hoist_system({**body, "messages": messages})
        direct = direct_requests.gemini_request(chat, self._tools)
        if direct is not None:  # a plain request: no signatures to restore
            converted = conversion.Conversion(chat, "google", self._config.name, direct)
            payload = direct
        else:
            converted = conversion.Conversion(chat, "google", self._config.name)
            payload = fixes.gemini_request(converted.body, chat)
            fixes.restore_signatures(payload["contents"], kept)
        stream = bool(body.get("stream"))
        return Request(
            self._url(body.get("model", ""), stream),
            payload,
            stream,
            functools.partial(_GeminiCodec, converted, stream),
        )

    def _url(self, model: Any, stream: bool) -> str:
        """Where a completion of `model` goes."""
        key = (model, stream) if model.__class__ is str else None
        url = self._urls.get(key) if key is not None else None  # type: ignore[arg-type]
        if url is None:
            quoted = quote(str(model).removeprefix("models/"), safe="-._")
            action = "streamGenerateContent?alt=sse" if stream else "generateContent"
            url = f"{self.models_url}/{quoted}:{action}"
            if key is not None and len(self._urls) < _KEPT_URLS:
                self._urls[key] = url
        return url

    def headers(self, incoming: Mapping[str, str] | None) -> tuple[dict[str, str], str]:
        if incoming:
            return self._forwarded(incoming)
        return self._headers(incoming)

    def _headers(self, incoming: Mapping[str, str] | None) -> tuple[dict[str, str], str]:
        headers = {"Content-Type": "application/json"}
        key = self._config.api_key
        if not key and incoming:
            key = incoming.get("x-goog-api-key") or ""
            bearer = incoming.get("authorization", "")
            if not key and bearer.lower().startswith("bearer "):
                key = bearer[7:].strip()
        if key:
            headers["x-goog-api-key"] = key
        return with_trace(headers, incoming), key

    def models(self, payload: Any) -> list[str]:
        if payload is None:
            return []
        models = payload.get("models") if isinstance(payload, dict) else None
        if not isinstance(models, list):
            raise UpstreamError(f"upstream {self._config.name!r} returned an invalid model list")
        names = (m.get("name") for m in models if isinstance(m, dict))
        return [n.removeprefix("models/") for n in names if isinstance(n, str)]


class GeminiUpstream(ProviderUpstream):
    """Gemini behind the Generative Language API (`format: gemini`)."""

    def __init__(self, config: UpstreamConfig) -> None:
        super().__init__(Transport(config), GeminiDialect(config))


class _GeminiCodec:
    """generateContent answers (streamed pieces, or the whole) to Chat chunks: pieces of
    plain text directly (and, once one has been, found by their bytes by the `scanner`,
    unparsed), the rest through rosetta.

    A piece's usage counts what came so far (the hosted service sends one on every piece):
    the last one is kept here, and a finishing piece without one is read with it.
    """

    def __init__(self, converted: conversion.Conversion, stream: bool = False) -> None:
        self.finished = False
        self.scanner = gemini_text() if stream else None
        self._conversion = converted
        self._processor: Any = None
        """Rosetta's stream processor, made by the first piece a plain answer has not."""
        self._plain: gemini_answers.GeminiStream | None = gemini_answers.GeminiStream()
        self._direct = conversion.DirectText()
        self._noted: fixes.GeminiCalls | None = None
        """The function calls seen (made by the first piece or answer that is not plain)."""
        self._usage: Any = None
        """The last usage of a piece read here (the scanner keeps that of a piece it found)."""

    def event(self, payload: dict[str, Any]) -> list[Chunk]:
        if "usageMetadata" in payload:
            self._usage = payload["usageMetadata"]
            if self.scanner is not None:
                self.scanner.usage = None  # older than this one
        elif (self._usage is not None or self._found_usage()) and _ends(payload):
            payload["usageMetadata"] = self._last_usage()
        direct = self._text(payload)
        if direct is not None:
            return direct
        plain = self._plain
        if plain is not None:
            chunks = plain.event(payload)
            if chunks is not None:
                return self._plain_piece(payload, plain, chunks)
        split = fixes.final_text(payload)
        if split is None:
            return self._piece(payload)
        # The text of a finishing piece goes first, as a piece of its own (rosetta drops it).
        text, rest = split
        return (self._text(text) or self._piece(text)) + self._piece(rest)

    def _piece(self, payload: dict[str, Any]) -> list[Chunk]:
        """The chunks of a piece that is not plain text."""
        if "error" in payload:
            raise _fault(payload)
        payload = self._calls.observe(payload)
        usage = payload.get("usageMetadata")
        chunks = conversion.without_rosetta_metadata(self._convert(payload))
        self._direct.learn(chunks)
        if _ends(payload):
            self.finished = True
            data = self._calls.provider_data()
            if data is not None:
                chunks.insert(0, provider_chunk(data))
        return conversion.with_usage(chunks, fixes.gemini_usage(usage) if usage else None)

    def _plain_piece(
        self, payload: dict[str, Any], plain: gemini_answers.GeminiStream, chunks: list[Chunk]
    ) -> list[Chunk]:
        """The chunks a plain answer's piece made, as `_piece` would leave them: such a piece
        holds no function call and no error (no call was seen before it either: the first
        ends the plain answer), so only its usage is mended, on the usage chunk its finish
        ends with."""
        if not plain.ended:
            self._direct.learn(chunks)
            return chunks
        self.finished = True
        chunks[-1]["usage"] = fixes.gemini_usage(payload["usageMetadata"])
        return chunks

    def _text(self, payload: dict[str, Any]) -> list[Chunk] | None:
        """The chunks of a piece holding one unfinished candidate of text parts only, or
        None. Its usage, if any, is kept by `event`, not read: a finishing piece has the
        call's. (Pieces are parsed JSON: exact dicts, lists and strs.)"""
        if not self._direct.learned or not _TEXT_PIECE_KEYS.issuperset(payload):
            return None
        candidates = payload.get("candidates")
        if candidates.__class__ is not list or len(candidates) != 1:
            return None
        candidate = candidates[0]
        if candidate.__class__ is not dict or not _TEXT_CANDIDATE_KEYS.issuperset(candidate):
            return None
        content = candidate.get("content")
        parts = content.get("parts") if content.__class__ is dict else None
        if parts.__class__ is not list or not parts:
            return None
        index = candidate.get("index", 0)
        chunks = []
        for part in parts:  # DirectText.chunk changes nothing: a late refusal is free
            text = part.get("text") if part.__class__ is dict and len(part) == 1 else None
            chunk = self._direct.chunk(index, text) if text.__class__ is str else None
            if chunk is None:
                return None
            chunks.append(chunk)
        return chunks

    def _found_usage(self) -> bool:
        """The scanner found a piece with usage after the last piece read here."""
        return self.scanner is not None and self.scanner.usage is not None

    def _last_usage(self) -> Any:
        """The last piece's usage: that of the last piece the scanner found (parsed now), or
        of the last one read here.

        Raises:
            Fault: the usage the scanner kept is not JSON.
        """
        found = self.scanner.usage if self.scanner is not None else None
        if found is None:
            return self._usage
        try:
            return orjson.loads(found)
        except orjson.JSONDecodeError as exc:
            raise Fault("upstream sent a piece that is not JSON") from exc

    @property
    def _calls(self) -> fixes.GeminiCalls:
        noted = self._noted
        if noted is None:
            noted = self._noted = fixes.GeminiCalls(_call_id)
        return noted

    def _convert(self, payload: dict[str, Any]) -> list[Chunk]:
        plain = self._plain
        if plain is not None:
            chunks = plain.event(payload)
            if chunks is not None:
                return chunks
            self._plain = None
            self._processor = self._conversion.stream(plain.seen)
        return self._conversion.chunks(self._processor, payload)

    def whole(self, payload: Any) -> list[Chunk]:
        if not isinstance(payload, dict) or "error" in payload:
            raise _fault(payload)
        usage = payload.get("usageMetadata")
        mended = fixes.gemini_usage(usage) if isinstance(usage, dict) else None
        direct = gemini_answers.gemini_whole(payload, mended)
        if direct is not None:
            return [direct_answers.relayable(direct, self._conversion.model)]
        payload = self._calls.observe(payload)
        converted = self._conversion.answer(payload)
        chunk = as_chunk(conversion.without_rosetta_metadata([converted])[0])
        if mended is not None:
            chunk["usage"] = mended
        data = self._calls.provider_data()
        return [chunk, provider_chunk(data)] if data is not None else [chunk]


_KEPT_URLS = 256
"""Models whose URLs a dialect keeps (any more are made per request)."""
_TEXT_PIECE_KEYS = frozenset(("candidates", "usageMetadata", "modelVersion", "responseId"))
_TEXT_CANDIDATE_KEYS = frozenset(("content", "index"))


def _call_id() -> str:
    """An id for a function call Gemini sent without one."""
    return f"call_{secrets.token_hex(12)}"


def _ends(payload: dict[str, Any]) -> bool:
    if (payload.get("promptFeedback") or {}).get("blockReason"):
        return True
    candidates = payload.get("candidates") or ()
    return any(isinstance(c, dict) and c.get("finishReason") for c in candidates)


def _fault(payload: Any) -> Fault:
    message = error_message(payload) or "the upstream reported an error"
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and error.get("status") == "UNAVAILABLE":
        return overloaded(message)
    return Fault(message)


__all__ = ["GeminiDialect", "GeminiUpstream"]
