"""Call listeners: code told before and after every call the executor runs.

Order, for each call: every listener's `before_call` in the order the listeners were
added; then, when the result is an error, every `on_error` in reverse order; then every
`after_call` in reverse order (the last to see the call first is the first to see its end,
as with nested context managers). `after_call` runs for errors too. A method may be sync
or async; a listener that raises is logged and does not change the call or its result.
A call cancelled by its caller gets `before_call` only.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from registry.calls import ToolCall, ToolResult
from registry.tool import Tool

__all__ = ["CallEvent", "CallListener", "Listeners"]

log = logging.getLogger("toolwire.execution")


@dataclass(frozen=True, slots=True)
class CallEvent:
    """The call a listener is told about."""

    tool: Tool
    call: ToolCall
    request_id: str | None


class CallListener(Protocol):
    """Any of these methods may be left out; each may be `async def`."""

    def before_call(self, event: CallEvent) -> Any: ...

    def after_call(self, event: CallEvent, result: ToolResult) -> Any: ...

    def on_error(self, event: CallEvent, result: ToolResult) -> Any: ...

    def on_permission(self, event: CallEvent, outcome: str, reason: str) -> Any:
        """A permission decision about the call: `denied`, `asked`, `approved` or
        `refused` (by a guard or a limit). Denied, asked and refused calls never run."""


class Listeners:
    """The executor's listeners, called in the documented order."""

    def __init__(self, listeners: Iterable[object] = ()) -> None:
        self._listeners: list[object] = list(listeners)

    def add(self, listener: object) -> None:
        """Add a listener after the existing ones."""
        self._listeners.append(listener)

    def remove(self, listener: object) -> None:
        """Remove a listener; removing one that is absent changes nothing."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    async def before(self, event: CallEvent) -> None:
        """Call every `before_call`, first added first."""
        for listener in list(self._listeners):
            await _notify(listener, "before_call", event)

    async def after(self, event: CallEvent, result: ToolResult) -> None:
        """Call `on_error` (errors only) and then `after_call`, last added first."""
        ordered = list(reversed(self._listeners))
        if result.is_error:
            for listener in ordered:
                await _notify(listener, "on_error", event, result)
        for listener in ordered:
            await _notify(listener, "after_call", event, result)

    async def permission(self, event: CallEvent, outcome: str, reason: str) -> None:
        """Call every `on_permission`, first added first."""
        for listener in list(self._listeners):
            await _notify(listener, "on_permission", event, outcome, reason)

    def __bool__(self) -> bool:
        return bool(self._listeners)


async def _notify(listener: object, method: str, *args: Any) -> None:
    hook = getattr(listener, method, None)
    if hook is None:
        return
    try:
        value = hook(*args)
        if inspect.isawaitable(value):
            await value
    except Exception:
        # A listener is an observer: its failure is logged, never the call's failure.
        log.exception("call listener %r failed in %s", listener, method)
