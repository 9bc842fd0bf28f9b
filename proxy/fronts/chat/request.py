"""A Chat Completions request, checked before anything is sent upstream.

The models describe only what the proxy and a strict upstream rely on; every other field
is kept as sent (`extra="allow"`). Errors name the field by its path (`messages[2].
tool_calls[0].function`), as OpenAI does.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

import orjson
from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from ...errors import BadRequestError
from ..validation import field_path

_OPEN = ConfigDict(extra="allow", strict=True)
# TypedDicts, not models: validated without building objects, twice as fast on the hot path.

Content = str | list[dict[str, Any]] | None


@with_config(_OPEN)
class _Function(TypedDict):
    name: str
    arguments: NotRequired[str | dict[str, Any]]


@with_config(_OPEN)
class _ToolCall(TypedDict):
    id: str
    function: _Function


@with_config(_OPEN)
class _System(TypedDict):
    role: Literal["system", "developer"]
    content: NotRequired[Content]


@with_config(_OPEN)
class _User(TypedDict):
    role: Literal["user"]
    content: NotRequired[Content]


@with_config(_OPEN)
class _Assistant(TypedDict):
    role: Literal["assistant"]
    content: NotRequired[Content]
    tool_calls: NotRequired[list[_ToolCall] | None]


@with_config(_OPEN)
class _ToolMessage(TypedDict):
    role: Literal["tool"]
    tool_call_id: str
    content: NotRequired[Content]


@with_config(_OPEN)
class _FunctionMessage(TypedDict):
    role: Literal["function"]
    name: str
    content: NotRequired[Content]


Message = Annotated[
    _System | _User | _Assistant | _ToolMessage | _FunctionMessage, Field(discriminator="role")
]


@with_config(_OPEN)
class _NamedChoice(TypedDict):
    type: Literal["function"]
    function: dict[str, str]


@with_config(_OPEN)
class _StreamOptions(TypedDict):
    include_usage: NotRequired[bool | None]


@with_config(_OPEN)
class ChatBody(TypedDict):
    """The fields of `POST /v1/chat/completions` that are checked."""

    model: Annotated[str, Field(min_length=1)]
    messages: Annotated[list[Message], Field(min_length=1)]
    stream: NotRequired[bool | None]
    stream_options: NotRequired[_StreamOptions | None]
    tool_choice: NotRequired[Literal["none", "auto", "required"] | _NamedChoice | None]
    parallel_tool_calls: NotRequired[bool | None]
    max_tokens: NotRequired[Annotated[int, Field(ge=1)] | None]
    max_completion_tokens: NotRequired[Annotated[int, Field(ge=1)] | None]
    n: NotRequired[Annotated[int, Field(ge=1)] | None]
    temperature: NotRequired[Annotated[float, Field(ge=0, le=2)] | None]
    top_p: NotRequired[Annotated[float, Field(ge=0, le=1)] | None]
    presence_penalty: NotRequired[Annotated[float, Field(ge=-2, le=2)] | None]
    frequency_penalty: NotRequired[Annotated[float, Field(ge=-2, le=2)] | None]
    stop: NotRequired[str | list[str] | None]
    seed: NotRequired[int | None]
    logprobs: NotRequired[bool | None]
    top_logprobs: NotRequired[Annotated[int, Field(ge=0, le=20)] | None]
    response_format: NotRequired[dict[str, Any] | None]
    user: NotRequired[str | None]


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
