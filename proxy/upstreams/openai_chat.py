"""Upstreams speaking OpenAI Chat Completions (vLLM, SGLang, Ollama, llama.cpp, OpenAI).

The loop speaks Chat too, so the body goes out as it is (minus the provider extension key)
and the chunks come back as they are; an unstreamed answer becomes one chunk whose delta
holds the whole message, so the loop has a single path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from registry import http1

from ..config import UpstreamConfig
from ..errors import UpstreamError
from ..turn.events import Usage
from .base import (
    TRACE_HEADERS,
    ChatTools,
    Chunk,
    Fault,
    Relayable,
    spliced,
    strip_provider,
    with_trace,
)
from .forwarded import ForwardedHeaders
from .provider import ProviderUpstream, Request
from .relay import TextScanner
from .transport import Transport, error_message


class ChatDialect:
    """Chat Completions: the body goes out as it is, minus the provider extension key."""

    def __init__(self, config: UpstreamConfig) -> None:
        self._api_key = config.api_key
        self._name = config.name
        self._url = f"{config.base_url}/chat/completions"
        self.models_url = f"{config.base_url}/models"
        self._answers: dict[str, Callable[[], ChatCodec]] = {}
        """Each model's codec of unstreamed answers (which keep no state), as its factory."""
        usual, self._credential = bearer(config.api_key, None)
        self._usual = http1.Headers(usual)
        """The headers of a request that brings none to add (no key of its own to forward,
        no trace context): made once, their head's lines too."""
        self._forwarded = ForwardedHeaders(functools.partial(bearer, ""), ("authorization",))
        """The headers with each client key forwarded (no key of the upstream's own)."""

    def request(self, body: dict[str, Any]) -> Request:
        payload = body
        messages = body.get("messages")
        if isinstance(messages, list):
            stripped = strip_provider(messages)
            if stripped is not messages:
                payload = {**body, "messages": stripped}
        tools = body.get("tools")
        if tools.__class__ is ChatTools:
            payload = {**payload, "tools": tools.json}  # a toolset's JSON, made once
        elif tools.__class__ is list:
            payload = {**payload, "tools": spliced(tools)}  # registry tools' JSON as it is
        if body.get("stream"):
            return Request(
                self._url, payload, True, functools.partial(ChatCodec, body.get("model"))
            )
        model = body.get("model")
        # A model's codec of unstreamed answers found without a call: every request asks.
        codec = self._answers.get(model) if model.__class__ is str else None
        return Request(self._url, payload, False, codec or self._answer_codec(model))

    def headers(self, incoming: Mapping[str, str] | None) -> tuple[dict[str, str], str]:
        if incoming:
            if not self._api_key and incoming.get("authorization"):
                return self._forwarded(incoming)
            for name in TRACE_HEADERS:
                if incoming.get(name):
                    return bearer(self._api_key, incoming)
        return self._usual, self._credential

    def models(self, payload: Any) -> list[str]:
        return model_ids(self._name, payload)

    def _answer_codec(self, model: Any) -> Callable[[], ChatCodec]:
        """The factory of `model`'s codec of unstreamed answers: one codec per model, made once
        (`whole` keeps no state), rather than one per answer."""
        if model.__class__ is not str:
            return functools.partial(ChatCodec, model, False)
        found = self._answers.get(model)
        if found is None:
            found = _always(ChatCodec(model, False))
            if len(self._answers) < _REMEMBERED_MODELS:
                self._answers[model] = found
        return found


_REMEMBERED_MODELS = 1024
"""Models whose codec of unstreamed answers a dialect keeps."""


def _always(codec: ChatCodec) -> Callable[[], ChatCodec]:
    return lambda: codec


class HTTPUpstream(ProviderUpstream):
    """An OpenAI-compatible server over pooled HTTP (`format: openai-chat`)."""

    def __init__(self, config: UpstreamConfig) -> None:
        super().__init__(Transport(config), ChatDialect(config))


class ChatCodec:
    """Chat chunks pass through; an error object in the stream is a fault.

    An unstreamed answer that is already what the Chat front would render for `model` comes
    back `Relayable`, so its bytes can go to the client as they are; a stream's text-only
    events are found by their bytes (`scanner`) and come as `Relayed` chunks, unparsed.
    """

    def __init__(self, model: Any = None, stream: bool = True) -> None:
        self.finished = False
        self.scanner = TextScanner() if stream else None
        self._model = model

    def event(self, payload: dict[str, Any]) -> list[Chunk]:
        if "error" in payload and "choices" not in payload:
            raise Fault(error_message(payload))
        if not self.finished:
            # Only a chunk with a finish_reason (or [DONE]) proves the upstream meant to stop
            # there. Spelled out here: every parsed event of a stream asks it.
            choices = payload.get("choices")
            if isinstance(choices, list):
                for choice in choices:
                    if isinstance(choice, dict) and choice.get("finish_reason") is not None:
                        self.finished = True
        return [payload]

    def whole(self, payload: Any) -> list[Chunk]:
        usage = relayable(payload, self._model) if payload.__class__ is dict else None
        if usage is None:
            return [as_chunk(payload)]
        # `as_chunk`'s chunk, of the fields `relayable` checked, its fields `pending` (the
        # Chat front reads none): made without `__init__`'s frame (one per answer).
        relayed: Relayable = _new_dict(Relayable)
        relayed.raw = None
        relayed.finish_reason = payload["choices"][0]["finish_reason"]
        relayed.usage = usage
        relayed.pending = (_chat_fields, payload, self._model)
        return [relayed]


def _chat_fields(chunk: Relayable, payload: dict[str, Any], model: Any) -> None:
    """`as_chunk`'s fields of a relayable answer (`Relayable.pending`), in `chunk`: the model
    the one asked for, which the check found the answer names."""
    message = payload["choices"][0]["message"]
    chunk["id"] = payload["id"]
    chunk["model"] = model
    chunk["choices"] = [
        {"index": 0, "delta": message, "logprobs": None, "finish_reason": chunk.finish_reason}
    ]
    chunk["usage"] = payload["usage"]


def bearer(api_key: str, incoming: Mapping[str, str] | None) -> tuple[dict[str, str], str]:
    """JSON headers with the configured key as a bearer token, else the client's own; and
    that `Authorization` value (empty without one)."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    elif incoming and incoming.get("authorization"):
        headers["Authorization"] = incoming["authorization"]
    return with_trace(headers, incoming), headers.get("Authorization", "")


def model_ids(name: str, payload: Any) -> list[str]:
    """The ids of an OpenAI-style model list (`{"data": [{"id": ...}]}`); None lists nothing.

    Raises:
        UpstreamError: the payload is not a model list.
    """
    if payload is None:
        return []
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise UpstreamError(f"upstream {name!r} returned an invalid model list")
    return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]


def as_chunk(payload: Any) -> Chunk:
    """Turn an unstreamed `chat.completion` into one equivalent chunk.

    Raises:
        UpstreamError: the payload has no usable first choice.
    """
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise UpstreamError("upstream answer has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise UpstreamError("upstream answer has no message")
    return {
        "id": payload.get("id"),
        "model": payload.get("model"),
        "choices": [
            {
                "index": 0,
                "delta": message,
                "logprobs": choice.get("logprobs"),
                "finish_reason": choice.get("finish_reason"),
            }
        ],
        "usage": payload.get("usage"),
    }


_RELAYED_TOP = frozenset({"id", "object", "created", "model", "choices", "usage"})
_RELAYED_CHOICE = frozenset({"index", "message", "finish_reason", "logprobs"})
_RELAYED_MESSAGE = frozenset({"role", "content", "reasoning_content", "refusal"})
_TEXT_MESSAGE = frozenset({"role", "content"})
_COUNTS = frozenset({"prompt_tokens", "completion_tokens", "total_tokens"})
_ENDS = ("stop", "length")
_TOP_FIELDS, _CHOICE_FIELDS, _TEXT_FIELDS, _COUNT_FIELDS = 6, 4, 2, 3
"""How many fields each of those sets has (a field more is checked by `_silent_beyond`)."""
_new_usage = tuple.__new__
_new_dict = dict.__new__


def relayable(payload: dict[str, Any], model: Any) -> Usage | None:
    """The answer's usage when an unstreamed answer means exactly what the Chat front renders for a
    one-round turn without tool calls (its id and time aside): the same fields and values,
    and beyond them only fields that say nothing (null, or vLLM's empty `tool_calls`), which
    a server like vLLM sends on every answer (`stop_reason`, `kv_transfer_params`, ...).

    Anything else (a tool call, a vendor value, a model other than the one asked for, usage
    that renders differently) goes the slow way, which rebuilds the answer: None.
    """
    # Each field by subscript, and their number: what comparing the keys with a set would
    # tell, at a fraction of its cost (every unstreamed answer is checked).
    try:
        kind = payload["object"]
        answered = payload["model"]
        answer_id = payload["id"]
        created = payload["created"]
        choices = payload["choices"]
        usage = payload["usage"]
    except KeyError:
        return None
    if len(payload) != _TOP_FIELDS and not _silent_beyond(payload, _RELAYED_TOP):
        return None
    if kind != "chat.completion" or answered != model:
        return None
    if answer_id.__class__ is not str or created.__class__ is not int:
        return None
    if choices.__class__ is not list or len(choices) != 1 or not _relayable_choice(choices[0]):
        return None
    if usage.__class__ is not dict:
        return None
    if len(usage) == _COUNT_FIELDS:
        # The usual usage, three counts: the same when `Usage` renders them.
        try:
            prompt = usage["prompt_tokens"]
            completion = usage["completion_tokens"]
            total = usage["total_tokens"]
        except KeyError:
            pass  # three fields, not those: counted below
        else:
            ints = prompt.__class__ is completion.__class__ is total.__class__ is int
            if ints and prompt >= 0 and completion >= 0 and total > 0:
                # `Usage(prompt, completion, total)`, built as the tuple it is (the named
                # tuple's own `__new__` is a Python function).
                return _new_usage(Usage, (prompt, completion, total, 0, 0))
    counted = Usage.from_chat(usage)
    rendered = counted.as_dict()
    if rendered == usage or rendered == {k: v for k, v in usage.items() if v is not None}:
        return counted
    return None


def _relayable_choice(choice: Any) -> bool:
    if choice.__class__ is not dict:
        return False
    try:  # each field by subscript, as in `relayable` (a missing one: never relayed)
        index = choice["index"]
        finish = choice["finish_reason"]
        message = choice["message"]
    except KeyError:
        return False
    if len(choice) == _CHOICE_FIELDS and "logprobs" in choice:  # its four fields alone
        logprobs = choice["logprobs"]
    elif _silent_beyond(choice, _RELAYED_CHOICE):
        logprobs = choice.get("logprobs")
    else:
        return False
    if index != 0 or logprobs is not None or finish not in _ENDS:
        return False
    if message.__class__ is not dict:
        return False
    try:
        role = message["role"]
        content = message["content"]
    except KeyError:
        return False
    if role != "assistant":
        return False
    if len(message) == _TEXT_FIELDS:  # role and content alone: the usual message
        return content is None or (content.__class__ is str and content != "")
    return _relayable_message(message, content)


def _relayable_message(message: dict[str, Any], content: Any) -> bool:
    """Whether a message of more fields than its role and `content` is relayed as it is."""
    if not message.keys() <= _RELAYED_MESSAGE and not _silent_beyond(message, _RELAYED_MESSAGE):
        return False
    for value in (content, message.get("reasoning_content"), message.get("refusal")):
        if not (value is None or (value.__class__ is str and value)):
            return False
    return True


def _silent_beyond(fields: dict[str, Any], known: frozenset[str]) -> bool:
    """Whether every field of `fields` not in `known` is null (or an empty `tool_calls`)."""
    for key, value in fields.items():
        if key not in known and value is not None and not (key == "tool_calls" and value == []):
            return False
    return True
