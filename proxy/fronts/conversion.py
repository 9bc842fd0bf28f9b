"""The fronts' conversions through llm-rosetta, its only caller on this side: a Responses or
Anthropic Messages request into the loop's Chat Completions body, and the proxy's hidden
tool rounds back into Responses items for a stored conversation.

llm-rosetta 0.13 converts input items or messages, tools and sampling fields to a Chat
body. What it gets wrong for a proxy in front of self-hosted servers is mended in this
one module:

- `text.format` (structured output) is dropped: it becomes Chat's `response_format`;
- `max_output_tokens` becomes `max_completion_tokens`, which Ollama and older vLLM
  ignore: it becomes `max_tokens`, which every OpenAI-compatible server reads;
- text-only content arrives as a list of text parts, which some servers (llama.cpp
  without `--jinja`, older vLLM templates) reject: it becomes a plain string;
- assistant messages carry `refusal: null`, a field strict servers may refuse: dropped;
- orphaned tool results are removed with a warning in rosetta's log: callers check the
  pairing first and answer the client with a 400 instead;
- an Anthropic assistant turn's thinking arrives as `reasoning_content` on the Chat
  message, which strict Chat servers reject in a request: it is dropped (Chat upstreams
  take no reasoning back).

The commonest requests (text turns, instructions or a system prompt, sampling fields, no
tools) are converted here directly, to the very body rosetta's conversion and the mending
give (rosetta's two-step conversion cost more than the rest of such a request's
preparation); anything else goes through rosetta.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Literal

from llm_rosetta import AnthropicConverter, OpenAIChatConverter, OpenAIResponsesConverter

from ..errors import BadRequestError

Source = Literal["openai_responses", "anthropic"]

_CHAT = OpenAIChatConverter()


@functools.cache
def _converter(source: Source) -> AnthropicConverter | OpenAIResponsesConverter:
    """The source format's converter, without rosetta's re-validation of its own
    intermediate form: the fronts check requests themselves, and that re-validation was
    most of the conversion's cost."""
    converter = AnthropicConverter() if source == "anthropic" else OpenAIResponsesConverter()
    converter.validate_output = False
    return converter


def to_chat(body: dict[str, Any], source: Source) -> dict[str, Any]:
    """A Chat Completions body equivalent to a Responses or Anthropic request body (the
    Responses front takes its plain requests to `direct_responses` first).

    Raises:
        BadRequestError: rosetta cannot convert the request.
    """
    if source == "anthropic":
        direct = _direct_messages(body)
        if direct is not None:
            return direct
    try:
        chat, _ = _CHAT.request_to_provider(_converter(source).request_from_provider(body))
    except Exception as exc:  # rosetta's ConversionError and whatever bad input makes it raise
        raise BadRequestError(f"the request cannot be converted: {exc}") from exc
    if source == "anthropic" and isinstance(chat.get("stop"), str):
        chat["stop"] = [chat["stop"]]
    if "max_completion_tokens" in chat:
        chat["max_tokens"] = chat.pop("max_completion_tokens")
    response_format = _response_format(body.get("text"))
    if response_format is not None:
        chat["response_format"] = response_format
    chat["messages"] = [_plain(m) for m in chat.get("messages", ())]
    return chat


_MESSAGES_DIRECT = frozenset(
    (
        "model",
        "messages",
        "system",
        "temperature",
        "top_p",
        "stop_sequences",
        "stream",
        "max_tokens",
    )
)
_ITEM_KEYS = frozenset(("type", "role", "content"))
_TURN_KEYS = frozenset(("role", "content"))
_BLOCK_KEYS = frozenset(("type", "text"))
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


def direct_responses(body: Mapping[str, Any], items: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The Chat body of a Responses request of text messages only (its `items`), made from
    its fields at once: the body `to_chat` gives of the request the front makes of a body
    with no tool, tool choice, structured output, reasoning or parallel-calls setting; None
    for any other body (which the front converts through `to_chat`).

    The front's caller checks that the request declares no function tool."""
    get = body.get
    for name in _NOT_DIRECT:
        if get(name) is not None:
            return None
    model = get("model")
    if not isinstance(model, str):
        return None
    messages: list[dict[str, Any]] = []
    instructions = get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            return None
        if instructions:
            messages.append({"role": "system", "content": instructions})
    for item in items:
        if not isinstance(item, dict) or item.keys() != _ITEM_KEYS or item["type"] != "message":
            return None
        role = _ROLES.get(item["role"]) if isinstance(item["role"], str) else None
        text = item["content"]
        if not isinstance(text, str):  # a text (a string input's) is taken without a call
            text = _text(text, "input_text", role == "user")
        if role is None or text is None:
            return None
        messages.append({"role": role, "content": text})
    chat: dict[str, Any] = {"model": model, "messages": messages}
    return _sampled(chat, body, get("max_output_tokens"), None)


_NOT_DIRECT = ("tool_choice", "text", "reasoning", "parallel_tool_calls")
"""Responses fields a request converted directly leaves out (null or absent)."""


def _direct_messages(body: dict[str, Any]) -> dict[str, Any] | None:
    """The Chat body of an Anthropic Messages request of text turns only, or None."""
    if not _MESSAGES_DIRECT.issuperset(body) or not isinstance(body.get("model"), str):
        return None
    if None in body.values():
        return None
    turns = body.get("messages")
    if not isinstance(turns, list):
        return None
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system is not None:
        text = _text(system, "text", True)
        if text is None:
            return None
        if text:
            messages.append({"role": "system", "content": text})
    for turn in turns:
        if not isinstance(turn, dict) or turn.keys() != _TURN_KEYS:
            return None
        role = turn["role"]
        text = _text(turn["content"], "text", role == "user")
        if role not in ("user", "assistant") or text is None:
            return None
        messages.append({"role": role, "content": text})
    stop = body.get("stop_sequences")
    if stop is not None and not (
        isinstance(stop, list) and stop and all(isinstance(s, str) for s in stop)
    ):
        return None
    chat: dict[str, Any] = {"model": body["model"], "messages": messages}
    return _sampled(chat, body, body.get("max_tokens"), stop)


def _text(content: Any, kind: str, parts: bool) -> str | None:
    """A string content, or (where `parts`) the joined text of a non-empty list of plain
    `kind` parts; None for anything else."""
    if isinstance(content, str):
        return content
    if not parts or not isinstance(content, list) or not content:
        return None
    texts = []
    for part in content:
        if not isinstance(part, dict) or part.keys() != _BLOCK_KEYS or part["type"] != kind:
            return None
        if not isinstance(part["text"], str):
            return None
        texts.append(part["text"])
    return "".join(texts)


_NUMBERS = (int, float)  # a tuple: `int | float` would make a union on every call


def _sampled(
    chat: dict[str, Any], body: Mapping[str, Any], max_tokens: Any, stop: list[str] | None
) -> dict[str, Any] | None:
    """`chat` with the request's sampling fields, in rosetta's order; None for values of a
    type rosetta would read otherwise."""
    for name in ("temperature", "top_p"):
        value = body.get(name)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, _NUMBERS):
                return None
            chat[name] = value
    if stop is not None:
        chat["stop"] = stop
    stream = body.get("stream")
    if stream is not None:
        if not isinstance(stream, bool):
            return None
        chat["stream"] = stream
    if max_tokens is not None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            return None
        chat["max_tokens"] = max_tokens
    return chat


def round_items(rounds: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """The proxy's hidden tool rounds (Chat messages) as Responses items, for the stored
    conversation."""
    if not rounds:
        return []
    ir = _CHAT.messages_from_provider(list(rounds))
    items, _ = _converter("openai_responses").messages_to_provider(ir)
    return list(items)


def _response_format(text: Any) -> dict[str, Any] | None:
    form = text.get("format") if isinstance(text, dict) else None
    if not isinstance(form, dict):
        return None
    kind = form.get("type")
    if kind == "json_schema":
        schema = {k: v for k, v in form.items() if k in ("name", "schema", "strict", "description")}
        return {"type": "json_schema", "json_schema": schema}
    if kind == "json_object":
        return {"type": "json_object"}
    return None


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    if message.get("refusal", 0) is None or "reasoning_content" in message:
        message = {k: v for k, v in message.items() if k not in ("refusal", "reasoning_content")}
    content = message.get("content")
    if isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type") == "text" for p in content
    ):
        message = {**message, "content": "".join(str(p.get("text", "")) for p in content)}
    return message
