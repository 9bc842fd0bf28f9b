"""Cancellations that redis-py drops, made to happen: a pytest plugin that finds the loops a
dropped cancellation keeps running.

    .venv/bin/python -m pytest -p testing.dropped_cancels tests/proxy/state

On Python 3.11 `asyncio.wait_for` returns the awaited result when a cancellation arrives as it
ends, and drops the cancellation; redis-py sends every command under it. A send takes
microseconds, so this is rare: a loop that follows a Redis store and misses it hangs a
replica's stop once in many runs (CI: the pins follower, 120 s). Under this plugin every send
takes `SEND_S` and goes on through any cancellation that comes meanwhile, which it drops: the
task gets the command's reply instead of `CancelledError`, its cancellation still requested
(`Task.cancelling()`, what `proxy.state.cancels` looks at). A loop that goes on after that
shows as a server that does not stop within `testing.asgi_serving.STOP_S`, or a test that
hangs. Slow (tests/proxy/state: 2 min alone, 30 s without it): a hunt, not part of the suite.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import types
from collections.abc import Awaitable, Iterator
from typing import Any, TypeVar

import pytest
import redis.asyncio.connection as redis_connection

__all__ = ["SEND_S", "dropping", "dropping_wait_for"]

T = TypeVar("T")

SEND_S = 0.05
"""How long each Redis command's send takes: long enough for cancellations to land in it."""


async def dropping_wait_for(sent: Awaitable[T], timeout: float | None = None) -> T:  # noqa: ASYNC109
    """`asyncio.wait_for` as redis-py's sends get it, at its worst on Python 3.11: the result
    even when the waiting task was cancelled meanwhile (that cancellation dropped)."""
    loop = asyncio.get_running_loop()

    async def slowly() -> T:
        try:
            await asyncio.sleep(SEND_S)
        except BaseException:
            if inspect.iscoroutine(sent):
                sent.close()  # never sent
            raise
        return await sent

    sending = asyncio.ensure_future(slowly())
    deadline = None if timeout is None else loop.time() + timeout
    while not sending.done():
        left = None if deadline is None else max(0.0, deadline - loop.time())
        try:
            await asyncio.wait({sending}, timeout=left)
        except asyncio.CancelledError:
            continue  # dropped
        if not sending.done():
            sending.cancel()
            await asyncio.wait({sending})
            raise TimeoutError
    return sending.result()


class _Asyncio(types.ModuleType):
    """The `asyncio` redis-py's connections see: asyncio's, but for `wait_for`."""

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)


@contextlib.contextmanager
def dropping() -> Iterator[None]:
    """redis-py's sends drop cancellations while the block runs."""
    patched = _Asyncio("asyncio")
    patched.wait_for = dropping_wait_for  # type: ignore[attr-defined]
    redis_connection.asyncio = patched  # type: ignore[assignment]
    try:
        yield
    finally:
        redis_connection.asyncio = asyncio


_held: list[contextlib.ExitStack] = []


def pytest_configure(config: pytest.Config) -> None:
    stack = contextlib.ExitStack()
    stack.enter_context(dropping())
    _held.append(stack)


def pytest_unconfigure(config: pytest.Config) -> None:
    while _held:
        _held.pop().close()
