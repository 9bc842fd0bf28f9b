"""An Anthropic Messages request, checked, and turned into the loop's Chat body."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...errors import BadRequestError
from ..conversion import to_chat
from ..validation import field_path

_OPEN = ConfigDict(extra="allow")


class _Block(BaseModel):
    model_config = _OPEN
    type: str


class _Message(BaseModel):
    model_config = _OPEN
    role: Literal["user", "assistant"]
    content: str | list[_Block]


class _Tool(BaseModel):
    model_config = _OPEN
    name: str = Field(min_length=1)
    input_schema: dict[str, Any] | None = None


class MessagesBody(BaseModel):
    """The fields of `POST /v1/messages` the proxy reads; the rest are kept, not used."""

    model_config = _OPEN

    model: str = Field(min_length=1)
    max_tokens: int = Field(ge=1)
    messages: list[_Message] = Field(min_length=1)
    system: str | list[_Block] | None = None
    tools: list[_Tool] | None = None
    tool_choice: dict[str, Any] | None = None
    stop_sequences: list[str] | None = None
    temperature: float | None = Field(default=None, ge=0, le=1)
    top_p: float | None = Field(default=None, ge=0, le=1)
    top_k: int | None = Field(default=None, ge=0)
    stream: bool | None = None
    thinking: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    toolwire: dict[str, Any] | None = None


def parse_body(raw: Any) -> MessagesBody:
    """The request body, checked.

    Raises:
        BadRequestError: a field is missing or of the wrong type (the path in the message).
    """
    if not isinstance(raw, dict):
        raise BadRequestError("the request body must be a JSON object")
    try:
        body = MessagesBody.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = field_path(first["loc"])
        reason = "Field required" if first["type"] == "missing" else first["msg"]
        raise BadRequestError(f"{where}: {reason}", param=where or None) from exc
    _check_pairing(raw["messages"])
    return body


def to_chat_body(raw: dict[str, Any]) -> dict[str, Any]:
    """The loop's Chat body for a checked Messages request (the `toolwire` field apart)."""
    request = {k: v for k, v in raw.items() if k not in ("toolwire", "metadata")}
    chat = to_chat(request, "anthropic")
    if not chat.get("messages"):
        raise BadRequestError("messages: no message to send")
    return chat


def _check_pairing(messages: list[dict[str, Any]]) -> None:
    """Every tool_result answers a tool_use of the assistant turn just before it."""
    previous: set[str] = set()
    for i, message in enumerate(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "user":
            for j, block in enumerate(blocks):
                if block.get("type") == "tool_result" and block.get("tool_use_id") not in previous:
                    raise BadRequestError(
                        f"messages.{i}.content.{j}: tool_result block answers no tool_use "
                        "block of the previous assistant message",
                        param=f"messages[{i}].content[{j}].tool_use_id",
                    )
        previous = (
            {str(b.get("id")) for b in blocks if b.get("type") == "tool_use"}
            if message.get("role") == "assistant"
            else previous
        )
