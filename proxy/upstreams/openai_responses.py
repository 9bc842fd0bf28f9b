"""Upstreams speaking OpenAI's Responses API (`format: openai-responses`): POST
{base_url}/responses, bearer key; streamed `response.*` events or a whole response."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from ..config import UpstreamConfig
from . import conversion, direct_requests, responses_answers
from . import responses_fixes as fixes
from .base import Chunk, Fault, provider_chunk
from .forwarded import ForwardedHeaders
from .openai_chat import as_chunk, bearer, model_ids
from .provider import ProviderUpstream, Request
from .transport import Transport, error_message

_KEY = "openai-responses"
_ENDS = ("response.completed", "response.incomplete")


class ResponsesDialect:
    """The Responses API: the loop's Chat bodies and chunks are converted."""

    def __init__(self, config: UpstreamConfig) -> None:
        self._api_key = config.api_key
        self._name = config.name
        self._url = f"{config.base_url}/responses"
        self.models_url = f"{config.base_url}/models"
        self._tools = direct_requests.responses_tools()
        self._forwarded = ForwardedHeaders(
            functools.partial(bearer, config.api_key), ("authorization",)
        )
        """The headers for each client key (the upstream's own key, if it has one, instead)."""

    def request(self, body: dict[str, Any]) -> Request:
        messages, kept = conversion.take_provider_data(body.get("messages") or [], _KEY)
        chat = {**body, "messages": messages}
        direct = direct_requests.responses_request(chat, self._tools)
        if direct is not None:  # a plain request: no reasoning to restore
            converted = conversion.Conversion(chat, "openai_responses", self._name, direct)
            payload = direct
        else:
            converted = conversion.Conversion(chat, "openai_responses", self._name)
            payload = fixes.responses_request(converted.body, chat)
            fixes.restore_reasoning(payload.get("input") or [], kept)
        return Request(
            self._url,
            payload,
            bool(payload.get("stream")),
            functools.partial(_ResponsesCodec, converted),
        )

    def headers(self, incoming: Mapping[str, str] | None) -> tuple[dict[str, str], str]:
        if incoming:
            return self._forwarded(incoming)
        return bearer(self._api_key, incoming)

    def models(self, payload: Any) -> list[str]:
        return model_ids(self._name, payload)


class ResponsesUpstream(ProviderUpstream):
    """A Responses API server (`format: openai-responses`)."""

    def __init__(self, config: UpstreamConfig) -> None:
        super().__init__(Transport(config), ResponsesDialect(config))


class _ResponsesCodec:
    """Responses stream events (or a whole response) to Chat chunks: output text deltas
    directly, the rest through rosetta."""

    def __init__(self, converted: conversion.Conversion) -> None:
        self.finished = False
        self._conversion = converted
        self._processor: Any = None
        """Rosetta's stream processor, made by the first event a plain answer has not."""
        self._plain: responses_answers.ResponsesStream | None = responses_answers.ResponsesStream()
        self._direct = conversion.DirectText()
        self._reasoning: list[dict[str, Any]] = []
        self._item_ids: dict[str, str] = {}

    def event(self, payload: dict[str, Any]) -> list[Chunk]:
        kind = payload.get("type")
        if kind == "response.output_text.delta":
            # Output text touches no reasoning or call state: made directly once DirectText
            # knows the envelope (events are parsed JSON: exact strs and lists).
            text = payload.get("delta")
            if text.__class__ is str and not payload.get("logprobs"):
                direct = self._direct.chunk(0, text)
                if direct is not None:
                    return [direct]
        if kind in ("error", "response.failed"):
            raise _fault(payload)
        item = payload.get("item")
        if isinstance(item, dict):
            self._note(item)
        if kind == "response.refusal.delta":
            delta = {"refusal": payload.get("delta") or ""}
            return [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}]
        chunks = self._convert(payload)
        self._direct.learn(chunks)
        if kind in _ENDS:
            self.finished = True
            response = payload.get("response") or {}
            if kind == "response.incomplete":
                chunks = self._incomplete(response)
            data = self._provider_data()
            if data is not None:
                chunks.insert(0, provider_chunk(data))
        return conversion.without_rosetta_metadata(chunks)

    def _convert(self, payload: dict[str, Any]) -> list[Chunk]:
        plain = self._plain
        if plain is not None:
            chunks = plain.event(payload)
            if chunks is not None:
                return chunks
            self._plain = None
            self._processor = self._conversion.stream(plain.seen)
        elif self._processor is None:
            self._processor = self._conversion.stream()
        return self._conversion.chunks(self._processor, payload)

    def whole(self, payload: Any) -> list[Chunk]:
        if (
            not isinstance(payload, dict)
            or payload.get("status") == "failed"
            or (payload.get("error") and "output" not in payload)
        ):
            raise _fault(payload)
        direct = responses_answers.responses_whole(payload)
        if direct is not None:  # one message of text: no reasoning or call to keep
            return [direct]
        for item in payload.get("output") or ():
            if isinstance(item, dict):
                self._note(item)
        completion = fixes.with_a_choice(self._conversion.answer(payload))
        chunk = as_chunk(conversion.without_rosetta_metadata([completion])[0])
        if payload.get("status") == "incomplete":
            chunk["choices"][0]["finish_reason"] = fixes.responses_finish(payload)
        data = self._provider_data()
        return [chunk, provider_chunk(data)] if data is not None else [chunk]

    def _note(self, item: dict[str, Any]) -> None:
        if item.get("type") == "function_call" and item.get("id") and item.get("call_id"):
            self._item_ids[str(item["call_id"])] = str(item["id"])
        elif item.get("type") == "reasoning" and item.get("status") != "in_progress":
            kept: dict[str, Any] = {
                k: item[k] for k in ("type", "id", "summary", "encrypted_content") if k in item
            }
            self._reasoning = [r for r in self._reasoning if r.get("id") != kept.get("id")]
            self._reasoning.append(kept)

    def _incomplete(self, response: dict[str, Any]) -> list[Chunk]:
        # Rosetta ends an incomplete stream without a finish reason or usage.
        finish = {"index": 0, "delta": {}, "finish_reason": fixes.responses_finish(response)}
        chunks: list[Chunk] = [{"choices": [finish]}]
        usage = response.get("usage")
        if isinstance(usage, dict):
            total = usage.get("total_tokens") or 0
            chunks.append(
                {
                    "choices": [],
                    "usage": {
                        "prompt_tokens": usage.get("input_tokens") or 0,
                        "completion_tokens": usage.get("output_tokens") or 0,
                        "total_tokens": total,
                    },
                }
            )
        return chunks

    def _provider_data(self) -> dict[str, Any] | None:
        if not self._reasoning and not self._item_ids:
            return None
        return {_KEY: {"reasoning": self._reasoning, "item_ids": self._item_ids}}


def _fault(payload: Any) -> Fault:
    response = payload.get("response") if isinstance(payload, dict) else None
    source = response if isinstance(response, dict) and response.get("error") else payload
    return Fault(error_message(source) or "the upstream reported an error")


__all__ = ["ResponsesDialect", "ResponsesUpstream"]
