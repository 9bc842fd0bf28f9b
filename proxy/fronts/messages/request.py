"""An Anthropic Messages request, checked, and turned into the loop's Chat body."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from ...errors import BadRequestError
from ..conversion import to_chat
from ..validation import field_path

_OPEN = ConfigDict(extra="allow")
# TypedDicts, not models: validated without building an object per message and block.


@with_config(_OPEN)
class _Block(TypedDict):
    type: str


@with_config(_OPEN)
class _Message(TypedDict):
    role: Literal["user", "assistant"]
    content: str | list[_Block]


@with_config(_OPEN)
class _Tool(TypedDict):
    name: Annotated[str, Field(min_length=1)]
    input_schema: NotRequired[dict[str, Any] | None]


@with_config(_OPEN)
class MessagesBody(TypedDict):
    """The fields of `POST /v1/messages` the proxy reads; the rest are kept, not used."""

    model: Annotated[str, Field(min_length=1)]
    max_tokens: Annotated[int, Field(ge=1)]
    messages: Annotated[list[_Message], Field(min_length=1)]
    system: NotRequired[str | list[_Block] | None]
    tools: NotRequired[list[_Tool] | None]
    tool_choice: NotRequired[dict[str, Any] | None]
    stop_sequences: NotRequired[list[str] | None]
    temperature: NotRequired[Annotated[float, Field(ge=0, le=1)] | None]
    top_p: NotRequired[Annotated[float, Field(ge=0, le=1)] | None]
    top_k: NotRequired[Annotated[int, Field(ge=0)] | None]
    stream: NotRequired[bool | None]
    thinking: NotRequired[dict[str, Any] | None]
    metadata: NotRequired[dict[str, Any] | None]
    toolwire: NotRequired[dict[str, Any] | None]


_BODY = TypeAdapter(MessagesBody)


def parse_body(raw: Any) -> MessagesBody:
    """The request body, checked: its fields as validated (unknown ones kept).

    Raises:
        BadRequestError: a field is missing or of the wrong type (the path in the message).
    """
    if not isinstance(raw, dict):
        raise BadRequestError("the request body must be a JSON object")
    try:
        body = _BODY.validate_python(raw)
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
