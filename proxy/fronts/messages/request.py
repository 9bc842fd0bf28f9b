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
    """The request body, checked: its fields as validated (unknown ones kept), or as sent
    when they are plainly valid (`plainly_valid`).

    Raises:
        BadRequestError: a field is missing or of the wrong type (the path in the message).
    """
    if not isinstance(raw, dict):
        raise BadRequestError("the request body must be a JSON object")
    if plainly_valid(raw):
        return raw  # type: ignore[return-value]
    try:
        body = _BODY.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = field_path(first["loc"])
        reason = "Field required" if first["type"] == "missing" else first["msg"]
        raise BadRequestError(f"{where}: {reason}", param=where or None) from exc
    _check_pairing(raw["messages"])
    return body


_NUMBER = (int, float)  # a float field takes an int too; neither takes a bool
_UNIT = (_NUMBER, 0, 1)
_SCALARS: dict[str, tuple[tuple[type, ...], Any, Any]] = {
    "max_tokens": ((int,), 1, None),
    "temperature": _UNIT,
    "top_p": _UNIT,
    "top_k": ((int,), 0, None),
    "stream": ((bool,), None, None),
    "tool_choice": ((dict,), None, None),
    "thinking": ((dict,), None, None),
    "metadata": ((dict,), None, None),
    "toolwire": ((dict,), None, None),
}
"""`MessagesBody`'s fields of one type, by name: their exact classes (no bool passes for a
number, no number for a bool) and bounds."""
_OWN = frozenset(("model", "messages", "system", "tools", "stop_sequences"))
"""`MessagesBody`'s other fields, which `plainly_valid` checks one by one."""


def plainly_valid(raw: dict[str, Any]) -> bool:
    """Whether `raw` is of the usual shape, passes `MessagesBody` and `_check_pairing`, for
    sure: a check by hand, at a fraction of the validator's cost. False says nothing (the
    validator and `_check_pairing` then decide, and word the error): only values of the
    exact classes JSON gives are taken (a number in a string, a whole float for an integer,
    which the validator's lax mode would take, are left to it), and anything unusual (a
    tool without a name, a block that is not an object) is left to them."""
    model = raw.get("model")
    if model.__class__ is not str or not model or "max_tokens" not in raw:
        return False
    for key, value in raw.items():
        rule = _SCALARS.get(key)
        if rule is None or value is None:
            continue
        kinds, low, high = rule
        if value.__class__ not in kinds:
            return False
        if low is not None and not low <= value:  # not `<`: a NaN passes neither way
            return False
        if high is not None and not value <= high:
            return False
    if raw["max_tokens"] is None:
        return False
    system = raw.get("system")
    if system is not None and system.__class__ is not str and not _blocks(system):
        return False
    stop = raw.get("stop_sequences")
    if stop is not None and not (stop.__class__ is list and all(s.__class__ is str for s in stop)):
        return False
    tools = raw.get("tools")
    if tools is not None and not _plain_tools(tools):
        return False
    return _plain_messages(raw.get("messages"))


def _blocks(content: Any) -> bool:
    """Whether a content is a list of objects, each with a string `type`."""
    if content.__class__ is not list:
        return False
    for block in content:
        if block.__class__ is not dict or block.get("type").__class__ is not str:
            return False
    return True


def _plain_tools(tools: Any) -> bool:
    """Whether `tools` pass `list[_Tool]` for sure: objects with a name, and an object (or
    null) for a schema where there is one."""
    if tools.__class__ is not list:
        return False
    for tool in tools:
        if tool.__class__ is not dict:
            return False
        name = tool.get("name")
        if name.__class__ is not str or not name:
            return False
        schema = tool.get("input_schema")
        if schema is not None and schema.__class__ is not dict:
            return False
    return True


def _plain_messages(messages: Any) -> bool:
    """Whether `messages` pass `list[_Message]` (not empty) and `_check_pairing` for sure."""
    if messages.__class__ is not list or not messages:
        return False
    previous: set[str] | None = None  # the last assistant message's tool_use ids
    for message in messages:
        if message.__class__ is not dict:
            return False
        role = message.get("role")
        content: Any = message.get("content")
        if content.__class__ is str:
            if role == "assistant":
                previous = None
            elif role != "user":
                return False
            continue
        if not _blocks(content):
            return False
        if role == "assistant":
            previous = {str(b.get("id")) for b in content if b["type"] == "tool_use"}
        elif role != "user" or not _answered(content, previous):
            return False
    return True


def _answered(content: list[dict[str, Any]], previous: set[str] | None) -> bool:
    """Whether each `tool_result` block of a user message answers a `tool_use` block of
    `previous` by its string id."""
    for block in content:
        if block["type"] == "tool_result":
            answered = block.get("tool_use_id")
            if answered.__class__ is not str or previous is None or answered not in previous:
                return False
    return True


def to_chat_body(raw: dict[str, Any]) -> dict[str, Any]:
    """The loop's Chat body for a checked Messages request (the `toolwire` field apart)."""
    request = raw
    if "toolwire" in raw or "metadata" in raw:
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
