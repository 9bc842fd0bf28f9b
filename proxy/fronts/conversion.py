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
"""

from __future__ import annotations

import functools
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
    """A Chat Completions body equivalent to a Responses or Anthropic request body.

    Raises:
        BadRequestError: rosetta cannot convert the request.
    """
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
