"""A Responses API request's body, checked (the plan of its tools is `tools_plan`'s).

The request becomes a Chat body for the loop (through llm-rosetta).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from ...errors import BadRequestError
from ..validation import field_path


@with_config(ConfigDict(extra="allow"))
class ResponsesBody(TypedDict):
    """The fields of `POST /v1/responses` the proxy reads; the rest are kept, not used.

    A TypedDict, not a model: validated without building an object."""

    model: Annotated[str, Field(min_length=1)]
    input: Any
    """A string or a list of items: checked by `input_items`."""
    instructions: NotRequired[str | None]
    tools: NotRequired[list[dict[str, Any]] | None]
    tool_choice: NotRequired[Literal["auto", "none", "required"] | dict[str, Any] | None]
    parallel_tool_calls: NotRequired[bool | None]
    max_output_tokens: NotRequired[Annotated[int, Field(ge=1)] | None]
    temperature: NotRequired[Annotated[float, Field(ge=0, le=2)] | None]
    top_p: NotRequired[Annotated[float, Field(ge=0, le=1)] | None]
    text: NotRequired[dict[str, Any] | None]
    reasoning: NotRequired[dict[str, Any] | None]
    metadata: NotRequired[dict[str, str] | None]
    store: NotRequired[bool | None]
    """Absent: true."""
    stream: NotRequired[bool | None]
    background: NotRequired[Any]
    """A boolean, checked by the handler (its own message)."""
    user: NotRequired[str | None]
    previous_response_id: NotRequired[str | None]
    toolwire: NotRequired[dict[str, Any] | None]


_BODY = TypeAdapter(ResponsesBody)


def parse_body(raw: Any) -> ResponsesBody:
    """The request body, checked: its fields as validated (unknown ones kept), or as sent
    when they are plainly valid (`plainly_valid`).

    Raises:
        BadRequestError: a field is missing or of the wrong type (the path in `param`).
    """
    if not isinstance(raw, dict):
        raise BadRequestError("the request body must be a JSON object")
    if plainly_valid(raw):
        return raw  # type: ignore[return-value]
    try:
        return _BODY.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = field_path(first["loc"])
        reason = "required" if first["type"] == "missing" else first["msg"]
        raise BadRequestError(f"{where}: {reason}", param=where or None) from exc


_PLAIN: dict[str, tuple[type, Any, Any]] = {
    "instructions": (str, None, None),
    "user": (str, None, None),
    "previous_response_id": (str, None, None),
    "parallel_tool_calls": (bool, None, None),
    "store": (bool, None, None),
    "stream": (bool, None, None),
    "temperature": (float, 0, 2),
    "top_p": (float, 0, 1),
    "max_output_tokens": (int, 1, None),
}
"""`ResponsesBody`'s scalar fields: the one class taken as it is, and the bounds."""
_NESTED = frozenset(("tools", "tool_choice", "text", "reasoning", "metadata", "toolwire"))
"""Fields the validator gives back as copies (or checks within): left to it (but a
`tool_choice` of `_CHOICE_VALUES`)."""
_CHOICE_VALUES = ("auto", "none", "required")
"""A `tool_choice` string (a tuple: `in` compares it with strings, hashing no object)."""


def plainly_valid(raw: dict[str, Any]) -> bool:
    """Whether `raw` passes `ResponsesBody` for sure, and the validator would give back its
    very values: a check by hand, at a fraction of the validator's cost, of a body whose
    fields are scalars (but its `input`, which the validator takes as it is). False says
    nothing (the validator then decides, and words the error): only values of the exact
    classes JSON gives are taken (a whole number for a float, which the validator turns into
    a float, is left to it), and so is any list or object of the body's own fields."""
    model = raw.get("model")
    if model.__class__ is not str or not model or "input" not in raw:
        return False
    for key in raw:  # model, input, background and unknown fields are kept as they are
        value = raw[key]
        if value is None:
            continue
        rule = _PLAIN.get(key)
        if rule is not None:
            kind, low, high = rule
            if value.__class__ is not kind:
                return False
            if (low is not None and not low <= value) or (high is not None and not value <= high):
                return False
        elif key in _NESTED and not (key == "tool_choice" and value in _CHOICE_VALUES):
            return False
    return True
