"""The execution context a tool may accept: call id, deadline and a cancellation flag."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ExecutionContext", "ToolCancelledError", "ToolContext"]


class ToolCancelledError(Exception):
    """Raised by `ToolContext.raise_if_cancelled` once the call was cancelled or timed out."""


@dataclass(slots=True)
class ToolContext:
    """Handed to a tool that declares a parameter of this type; it is not in the schema.

    `cancelled` is a `threading.Event`, so sync code in a worker thread can poll it
    (`ctx.cancelled.is_set()`) or wait on it. In process mode the flag never becomes set:
    a cancelled or timed-out call has its worker process killed instead.
    """

    call_id: str
    deadline: float | None = None
    """`time.monotonic()` value after which the call has timed out; None for no deadline."""
    request_id: str | None = None
    attempt: int = 1
    cancelled: threading.Event = field(default_factory=threading.Event)

    def remaining(self) -> float | None:
        """Seconds until the deadline (never negative), or None without a deadline."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def raise_if_cancelled(self) -> None:
        """Stop a tool whose call was cancelled or timed out.

        Raises:
            ToolCancelledError: the call was cancelled or its deadline has passed.
        """
        if self.cancelled.is_set():
            raise ToolCancelledError(f"call {self.call_id} was cancelled")
        remaining = self.remaining()
        if remaining is not None and remaining <= 0:
            raise ToolCancelledError(f"call {self.call_id} ran past its deadline")

    def __reduce__(self) -> tuple[Any, ...]:
        # An Event holds a lock, which cannot cross into a worker process; the copy gets a
        # fresh flag (process calls are stopped by killing the worker, not by the flag).
        return (ToolContext, (self.call_id, self.deadline, self.request_id, self.attempt))


ExecutionContext = ToolContext
"""Alias: the same type under the name some tool authors expect."""
