"""The running call's timeout, for code that must stop it counting: a tool call whose server
asks a person a question should not time out because the person is slow to answer.

The executor sets `call_clock` while a call runs; whoever waits on someone else's behalf
inside the call wraps the wait in the clock's `paused()`.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Protocol

__all__ = ["CallClock", "call_clock"]


class CallClock(Protocol):
    """A running call's timeout."""

    def paused(self) -> contextlib.AbstractContextManager[None]:
        """Time spent inside the block is added to the call's deadline (it cannot expire
        meanwhile)."""
        ...


call_clock: ContextVar[CallClock | None] = ContextVar("toolwire_call_clock", default=None)
"""The clock of the call running in this context (None outside the executor's calls)."""
