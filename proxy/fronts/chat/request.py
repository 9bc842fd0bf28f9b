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


def parse_body(raw: bytes) -> tuple[dict[str, Any], bool]:
    """The request body, checked; returned as sent (unknown fields kept); and whether its
    messages are known to be bare (`BARE`: the loop's `relay` and `run` need not look at them
    again).

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
    plain = plainly_valid(body)
    if plain:
        return body, plain == BARE
    try:
        _BODY.validate_python(body)
    except ValidationError as exc:
        raise _bad_request(exc) from exc
    _check_pairing(body["messages"])
    return body, False


_CHOICES = frozenset({"none", "auto", "required"})
_OWN = ((), None, None)
"""The rule of a field `_own_field` checks."""
_INT = (int,)
_NUMBER = (int, float)  # strict float takes an int too; neither takes a bool
_SCALARS: dict[str, tuple[tuple[type, ...], Any, Any]] = {
    "stream": ((bool,), None, None),
    "parallel_tool_calls": ((bool,), None, None),
    "logprobs": ((bool,), None, None),
    "max_tokens": (_INT, 1, None),
    "max_completion_tokens": (_INT, 1, None),
    "n": (_INT, 1, None),
    "seed": (_INT, None, None),
    "top_logprobs": (_INT, 0, 20),
    "temperature": (_NUMBER, 0, 2),
    "top_p": (_NUMBER, 0, 1),
    "presence_penalty": (_NUMBER, -2, 2),
    "frequency_penalty": (_NUMBER, -2, 2),
    "user": ((str,), None, None),
    "stop": ((str,), None, None),
    "response_format": ((dict,), None, None),
    "tool_choice": _OWN,
    "stream_options": _OWN,
}
"""`ChatBody`'s optional fields, by name: their types (the exact classes, so no bool passes
for a number) and bounds, or `_OWN`."""


PLAIN = 1
"""`plainly_valid`'s answer for a body it passes."""
BARE = 2
"""`plainly_valid`'s answer for a body it passes whose messages also have no `tool_calls`
and no `toolwire` field (so no tool message either: each answers an earlier call): the
loop's `_history` would find no tool round and nothing to remove, as this scan found."""


def plainly_valid(body: dict[str, Any]) -> int:
    """Whether `body` is of the usual shape, passes `ChatBody` and answers only tool calls
    made earlier (`_check_pairing`), for sure: a check by hand, at about a third of the
    validator's cost. `PLAIN` or `BARE` when it is; 0 says nothing (the validator and
    `_check_pairing` then decide, and word the error): only fields of the usual kinds are
    looked at, and anything else (a message without `content`, a content part that is not an
    object, a named tool choice, a list of stops) is left to them."""
    model = body.get("model")
    if model.__class__ is not str or not model:
        return 0
    plain = _plain_messages(body.get("messages"))
    if not plain:
        return 0
    for key, value in body.items():
        rule = _SCALARS.get(key)
        if rule is None or value is None:
            continue
        if rule is _OWN:
            if not _own_field(key, value):
                return 0
            continue
        kinds, low, high = rule
        if value.__class__ not in kinds:
            return 0
        if low is not None and not low <= value:  # not `<`: a NaN passes neither way
            return 0
        if high is not None and not value <= high:
            return 0
    return plain


def _plain_messages(messages: Any) -> int:
    """Whether `messages` pass `list[Message]` (not empty) and `_check_pairing` for sure:
    `PLAIN`, or `BARE` when none has `tool_calls` or a `toolwire` field; else 0."""
    if messages.__class__ is not list or not messages:
        return 0
    called: set[Any] | None = None
    odd = False
    try:
        for message in messages:
            # A message that is no object, or lacks a field, raises here: the validator's.
            content = message["content"]
            if content.__class__ is not str and content is not None and not _parts(content):
                return 0
            # No branch (the function has enough): a field `_history` would look at.
            odd |= "tool_calls" in message or "toolwire" in message
            role = message["role"]
            if role == "user" or role == "system" or role == "developer":
                continue
            if role == "assistant":
                calls = message.get("tool_calls")
                if calls is not None:
                    called = called if called is not None else set()
                    if not _plain_calls(calls, called):
                        return 0
            elif role == "tool":
                if called is None or message["tool_call_id"] not in called:  # str ids
                    return 0
            elif role != "function" or message["name"].__class__ is not str:
                return 0
    except (KeyError, TypeError):
        return 0
    return PLAIN if odd else BARE


def _own_field(key: str, value: Any) -> bool:
    """Whether `tool_choice` is one of its words, or `stream_options` an object whose
    `include_usage` is a bool (or null)."""
    if key == "tool_choice":
        return value.__class__ is str and value in _CHOICES
    if value.__class__ is not dict:
        return False
    include = value.get("include_usage")
    return include is None or include.__class__ is bool


def _parts(content: Any) -> bool:
    """Whether a message's content is a list of objects (its parts)."""
    return content.__class__ is list and all(part.__class__ is dict for part in content)


def _plain_calls(calls: Any, called: set[Any]) -> bool:
    """Whether an assistant message's `tool_calls` pass `list[_ToolCall]` for sure; their
    ids go into `called`."""
    if calls.__class__ is not list:
        return False
    for call in calls:
        if call.__class__ is not dict:
            return False
        call_id = call.get("id")
        if call_id.__class__ is not str:
            return False
        called.add(call_id)
        function = call.get("function")
        if function.__class__ is not dict or function.get("name").__class__ is not str:
            return False
        arguments = function.get("arguments", "")
        if arguments.__class__ is not str and arguments.__class__ is not dict:
            return False
    return True


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
