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
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from registry.calls import ToolCall, ToolResult
from registry.tool import Tool

__all__ = ["CallEvent", "CallListener", "Listeners"]

log = logging.getLogger("toolwire.execution")


@dataclass(slots=True, unsafe_hash=True)
class CallEvent:
    """The call a listener is told about.

    Not changed once made, though not frozen: one is made per call, and a frozen dataclass sets
    each field through `object.__setattr__` (about four times the cost); it compares and
    hashes as a frozen one would."""

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
    """The executor's listeners, called in the documented order.

    Each hook is looked up once, when the listeners change, not on every call: the
    listeners run for every tool call, on the hot path.
    """

    def __init__(self, listeners: Iterable[object] = ()) -> None:
        self._listeners: list[object] = list(listeners)
        self._hooks: dict[str, tuple[Callable[..., Any], ...]] = {}
        self._index()

    def add(self, listener: object) -> None:
        """Add a listener after the existing ones."""
        self._listeners.append(listener)
        self._index()

    def remove(self, listener: object) -> None:
        """Remove a listener; removing one that is absent changes nothing."""
        if listener in self._listeners:
            self._listeners.remove(listener)
            self._index()

    async def before(self, event: CallEvent) -> None:
        """Call every `before_call`, first added first."""
        for hook in self._hooks["before_call"]:
            pending = _called(hook, event)
            if pending is not None:
                await _awaited(hook, pending)

    async def after(self, event: CallEvent, result: ToolResult) -> None:
        """Call `on_error` (errors only) and then `after_call`, last added first."""
        if result.is_error:
            for hook in self._hooks["on_error"]:
                pending = _called(hook, event, result)
                if pending is not None:
                    await _awaited(hook, pending)
        for hook in self._hooks["after_call"]:
            pending = _called(hook, event, result)
            if pending is not None:
                await _awaited(hook, pending)

    async def permission(self, event: CallEvent, outcome: str, reason: str) -> None:
        """Call every `on_permission`, first added first."""
        for hook in self._hooks["on_permission"]:
            pending = _called(hook, event, outcome, reason)
            if pending is not None:
                await _awaited(hook, pending)

    def __bool__(self) -> bool:
        return self.any

    def _index(self) -> None:
        def hooks(method: str, listeners: list[object]) -> tuple[Callable[..., Any], ...]:
            found = (getattr(listener, method, None) for listener in listeners)
            return tuple(hook for hook in found if hook is not None)

        self.any = bool(self._listeners)
        """Whether there is a listener (read as an attribute on every call: `bool()` of
        the listeners is a Python call)."""
        first, last = self._listeners, self._listeners[::-1]
        self._hooks = {
            "before_call": hooks("before_call", first),
            "on_error": hooks("on_error", last),
            "after_call": hooks("after_call", last),
            "on_permission": hooks("on_permission", first),
        }


def _called(hook: Callable[..., Any], *args: Any) -> Awaitable[Any] | None:
    """Call a hook; what is left to await when it is async, else None. A sync hook (the
    usual kind) is done here, with no coroutine built around it on every call."""
    try:
        value = hook(*args)
    except Exception:
        # A listener is an observer: its failure is logged, never the call's failure.
        log.exception("call listener %r failed", hook)
        return None
    return value if value is not None and inspect.isawaitable(value) else None


async def _awaited(hook: Callable[..., Any], pending: Awaitable[Any]) -> None:
    try:
        await pending
    except Exception:
        log.exception("call listener %r failed", hook)
