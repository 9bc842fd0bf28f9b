"""A model's request to call a tool, and what the call produced."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["ErrorKind", "ToolCall", "ToolOutput", "ToolResult"]


class ErrorKind(StrEnum):
    """Why a call produced an error result; the values appear in the model-visible text."""

    UNKNOWN_TOOL = "unknown_tool"
    INVALID_JSON = "invalid_json"
    INVALID_ARGUMENTS = "invalid_arguments"
    TIMEOUT = "timeout"
    EXCEPTION = "exception"
    DENIED = "denied"
    CANCELLED = "cancelled"
    LIMIT = "limit"
    GUARD = "guard"
    """A guard (sandbox, required arguments, rate limit) refused the call."""
    RATE_LIMIT = "rate_limit"
    """The caller's key has made its tool calls for this minute."""
    APPROVAL_REQUIRED = "approval_required"
    """The policy asks for an approval and none was given."""
    TOOL_ERROR = "tool_error"
    """The tool itself reported failure (an MCP result with isError, an HTTP error status)."""


@dataclass(slots=True, unsafe_hash=True)
class ToolCall:
    """One tool call as the model made it; `name` is the wire name the model used.

    Not changed once made, though not frozen: one is made per call, and a frozen dataclass sets
    each field through `object.__setattr__` (about four times the cost); it compares and
    hashes as a frozen one would."""

    id: str
    name: str
    arguments: str | dict[str, Any]


@dataclass(slots=True, unsafe_hash=True)
class ToolOutput:
    """What a tool returns when plain text is not enough (remote tools return this).

    `attachments` are OpenAI content parts (`image_url` with a data URL, `input_audio`,
    `file`) that the loop shows the model next to the text.

    Not changed once made, though not frozen: one is made per call, and a frozen dataclass sets
    each field through `object.__setattr__` (about four times the cost); it compares and
    hashes as a frozen one would.
    """

    text: str
    attachments: tuple[dict[str, Any], ...] = ()
    is_error: bool = False
    structured: Any = None
    """Structured content as the tool gave it, kept for callers that want it."""


@dataclass(slots=True, unsafe_hash=True)
class ToolResult:
    """The text a call returns to the model, and whether it reports a failure.

    Not changed once made, though not frozen: one is made per call, and a frozen dataclass sets
    each field through `object.__setattr__` (about four times the cost); it compares and
    hashes as a frozen one would."""

    call_id: str
    content: str
    is_error: bool = False
    error_kind: str | None = None
    attachments: tuple[dict[str, Any], ...] = ()

    @classmethod
    def error(cls, call_id: str, kind: str, message: str) -> ToolResult:
        """Build an error result whose text tells the model what went wrong."""
        kind = str(kind)
        return cls(
            call_id=call_id, content=f"Error ({kind}): {message}", is_error=True, error_kind=kind
        )
