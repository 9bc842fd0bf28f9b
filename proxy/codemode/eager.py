"""Tasks that start at once: a coroutine's first step runs now, as its own task, instead of at
the event loop's next turn (Python 3.12's `eager_start`, made for 3.11 too).

A program's call handed to the event loop from the sandbox thread is often done without
waiting at all; started eagerly its result is ready while the loop is still in the turn that
received it, and the loop goes back to sleep at once instead of holding the GIL for one more
turn while the sandbox thread wants it.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

T = TypeVar("T")


def start_task(
    loop: asyncio.AbstractEventLoop,
    coroutine: Coroutine[Any, Any, T],
    context: contextvars.Context,
) -> asyncio.Task[T]:
    """A task running `coroutine` in `context`, its first step (up to its first wait) taken
    before this returns, with the task current (as `asyncio.timeout` and task groups need).
    Call it from a callback of `loop`, outside any task."""
    if sys.version_info >= (3, 12):
        return asyncio.Task(coroutine, loop=loop, context=context, eager_start=True)
    resumed = _Resumed(coroutine)
    task = loop.create_task(resumed, context=context)
    asyncio.tasks._enter_task(loop, task)
    try:
        context.run(resumed.first_step)
    finally:
        asyncio.tasks._leave_task(loop, task)
    return task


class _Resumed(Coroutine[Any, Any, T]):
    """A coroutine whose first step was already taken: the task's own first step gets what
    that step gave (the future it waits on, its value or its error), then everything passes
    through to the coroutine, cancellation included."""

    def __init__(self, coroutine: Coroutine[Any, Any, T]) -> None:
        self._coroutine = coroutine
        self._first: tuple[str, Any] | None = None

    def first_step(self) -> None:
        try:
            self._first = ("yield", self._coroutine.send(None))
        except StopIteration as stop:
            self._first = ("return", stop.value)
        except BaseException as exc:  # the task raises it, as it would have
            self._first = ("raise", exc)

    def send(self, value: Any) -> Any:
        first, self._first = self._first, None
        if first is None:
            return self._coroutine.send(value)
        kind, outcome = first
        if kind == "return":
            raise StopIteration(outcome)
        if kind == "raise":
            raise outcome
        return outcome

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        first, self._first = self._first, None
        if first is not None and first[0] != "yield":  # done already: the error is the end
            raise typ if val is None else val
        if val is None and tb is None:
            return self._coroutine.throw(typ)
        return self._coroutine.throw(typ, val, tb)

    def close(self) -> None:
        self._coroutine.close()

    def __await__(self) -> Generator[Any, None, T]:
        raise TypeError("a task's coroutine is not awaited")


__all__ = ["start_task"]
