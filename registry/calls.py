"""A model's request to call a tool, and what the call produced."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["ErrorKind", "ToolCall", "ToolResult"]


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


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as the model made it; `name` is the wire name the model used."""

    id: str
    name: str
    arguments: str | dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The text a call returns to the model, and whether it reports a failure."""

    call_id: str
    content: str
    is_error: bool = False
    error_kind: str | None = None

    @classmethod
    def error(cls, call_id: str, kind: str, message: str) -> ToolResult:
        """Build an error result whose text tells the model what went wrong."""
        kind = str(kind)
        return cls(
            call_id=call_id, content=f"Error ({kind}): {message}", is_error=True, error_kind=kind
        )
