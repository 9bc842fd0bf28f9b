"""The internal event stream of one turn, consumed by the SSE and JSON renderers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from registry import ToolCall, ToolResult


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts, summed over every upstream call of a turn."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """Model text (or reasoning) to show the client now."""

    content: str | None = None
    reasoning: str | None = None


@dataclass(frozen=True, slots=True)
class ToolsStarted:
    """The proxy began running these calls."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class ToolsFinished:
    """The proxy's calls of one round have their results, in call order."""

    calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]


@dataclass(frozen=True, slots=True)
class KeepAlive:
    """Nothing to show yet; keep the connection open."""


@dataclass(frozen=True, slots=True)
class Finished:
    """The turn is over: why, its summed usage, and the calls handed to the client."""

    finish_reason: str
    usage: Usage
    tool_calls: tuple[ToolCall, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    """Toolwire's own fields for the final message (`toolwire` key), e.g. which guard stopped."""


LoopEvent = ContentDelta | ToolsStarted | ToolsFinished | KeepAlive | Finished
