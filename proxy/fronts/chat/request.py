"""A Chat Completions request, checked before anything is sent upstream.

The models describe only what the proxy and a strict upstream rely on; every other field
is kept as sent (`extra="allow"`). Errors name the field by its path (`messages[2].
tool_calls[0].function`), as OpenAI does.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ...errors import BadRequestError
from ..validation import field_path

_OPEN = ConfigDict(extra="allow", strict=True)

Content = str | list[dict[str, Any]] | None


class _Function(BaseModel):
    model_config = _OPEN
    name: str
    arguments: str | dict[str, Any] = ""


class _ToolCall(BaseModel):
    model_config = _OPEN
    id: str
    function: _Function


class _System(BaseModel):
    model_config = _OPEN
    role: Literal["system", "developer"]
    content: Content = None


class _User(BaseModel):
    model_config = _OPEN
    role: Literal["user"]
    content: Content = None


class _Assistant(BaseModel):
    model_config = _OPEN
    role: Literal["assistant"]
    content: Content = None
    tool_calls: list[_ToolCall] | None = None


class _ToolMessage(BaseModel):
    model_config = _OPEN
    role: Literal["tool"]
    tool_call_id: str
    content: Content = None


class _FunctionMessage(BaseModel):
    model_config = _OPEN
    role: Literal["function"]
    name: str
    content: Content = None


Message = Annotated[
    _System | _User | _Assistant | _ToolMessage | _FunctionMessage, Field(discriminator="role")
]


class _NamedChoice(BaseModel):
    model_config = _OPEN
    type: Literal["function"]
    function: dict[str, str]


class _StreamOptions(BaseModel):
    model_config = _OPEN
    include_usage: bool | None = None


class ChatBody(BaseModel):
    """The fields of `POST /v1/chat/completions` that are checked."""

    model_config = _OPEN

    model: str = Field(min_length=1)
    messages: list[Message] = Field(min_length=1)
    stream: bool | None = None
    stream_options: _StreamOptions | None = None
    tool_choice: Literal["none", "auto", "required"] | _NamedChoice | None = None
    parallel_tool_calls: bool | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    n: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    stop: str | list[str] | None = None
    seed: int | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    response_format: dict[str, Any] | None = None
    user: str | None = None


_BODY = TypeAdapter(ChatBody)


def parse_body(raw: bytes) -> dict[str, Any]:
    """The request body, checked; returned as sent (unknown fields kept).

    Raises:
        BadRequestError: not JSON, a field of the wrong type or shape (its path in
            `param`), or a tool message answering no earlier tool call.
    """
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequestError(f"the request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequestError("the request body must be a JSON object")
    try:
        _BODY.validate_python(body)
    except ValidationError as exc:
        raise _bad_request(exc) from exc
    _check_pairing(body["messages"])
    return body


def _bad_request(exc: ValidationError) -> BadRequestError:
    first = exc.errors()[0]
    path = field_path(first["loc"])
    if first["type"] == "missing":
        reason = "required"
    elif first["type"] == "union_tag_invalid":
        reason = "each message must have a valid 'role'"
    else:
        reason = first["msg"]
    return BadRequestError(f"{path}: {reason}", param=path or None)


def _check_pairing(messages: list[dict[str, Any]]) -> None:
    """Every tool message answers a call an earlier assistant message made."""
    called: set[str] = set()
    for i, message in enumerate(messages):
        role = message["role"]
        if role == "assistant":
            called.update(c["id"] for c in message.get("tool_calls") or ())
        elif role == "tool" and message["tool_call_id"] not in called:
            raise BadRequestError(
                "a tool message must answer a tool call of an earlier assistant message",
                param=f"messages[{i}].tool_call_id",
            )
