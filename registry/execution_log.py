"""The execution log: a bounded ring of recent tool calls, secrets redacted."""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["REDACTED", "ExecutionLog", "ExecutionRecord", "redact"]

REDACTED = "[redacted]"
_SECRET_KEY = re.compile(
    r"pass(word|wd)?|token|secret|api[-_]?key|authori[sz]ation|cookie|credential|private[-_]?key",
    re.IGNORECASE,
)
_SUMMARY_CHARS = 200
_MAX_DEPTH = 8


@dataclass(frozen=True, slots=True)
class ExecutionRecord:
    """One finished call as the log keeps it."""

    tool: str
    call_id: str
    arguments: Any
    """The arguments as the model sent them, with secret values replaced by REDACTED."""
    result: str
    """The first characters of the result text."""
    duration_s: float
    error: str | None
    """The error kind, or None for a success."""
    request_id: str | None
    attempts: int
    mode: str | None
    """The backend that ran the call; None when it never ran (bad arguments)."""
    repairs: tuple[str, ...] = ()
    started_at: float = 0.0
    """Wall-clock start, `time.time()`."""


class ExecutionLog:
    """The last `capacity` calls, oldest first; safe to use from several threads.

    Raises:
        ValueError: `capacity` is negative.
    """

    def __init__(self, capacity: int = 1000) -> None:
        if capacity < 0:
            raise ValueError("capacity must not be negative")
        self._records: deque[ExecutionRecord] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    @property
    def capacity(self) -> int:
        """How many records are kept."""
        return self._records.maxlen or 0

    def record(self, record: ExecutionRecord) -> None:
        """Add a record, dropping the oldest when full."""
        with self._lock:
            self._records.append(record)

    def records(
        self, *, request_id: str | None = None, tool: str | None = None
    ) -> list[ExecutionRecord]:
        """The kept records, oldest first, optionally only one request's or one tool's."""
        with self._lock:
            kept = list(self._records)
        return [
            r
            for r in kept
            if (request_id is None or r.request_id == request_id)
            and (tool is None or r.tool == tool)
        ]

    def clear(self) -> None:
        """Forget every record."""
        with self._lock:
            self._records.clear()

    def __len__(self) -> int:
        return len(self._records)


def redact(value: Any, depth: int = 0) -> Any:
    """A copy of `value` whose values under secret-looking keys are REDACTED."""
    if depth > _MAX_DEPTH:
        return "…"
    if isinstance(value, Mapping):
        return {
            key: REDACTED
            if isinstance(key, str) and _SECRET_KEY.search(key)
            else redact(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(item, depth + 1) for item in value]
    return value


def summarize(text: str) -> str:
    """The start of a result, for the log."""
    return text if len(text) <= _SUMMARY_CHARS else text[:_SUMMARY_CHARS] + "…"
