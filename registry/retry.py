"""Retries of transient failures: which errors are transient, how long to wait, how often."""

from __future__ import annotations

import asyncio
import functools
import inspect
import random
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from registry.tags import Tag
from registry.tool import Tool

__all__ = [
    "RetryOutcome",
    "RetrySettings",
    "RetryableError",
    "TransientError",
    "call_with_retries",
    "is_transient",
    "retries_for",
    "retryable",
]

F = TypeVar("F", bound=Callable[..., Any])
_TRANSIENT_STATUSES = frozenset({429, 503})


class TransientError(Exception):
    """A failure worth retrying (a dropped connection, a busy service).

    Tools and remote sources raise it; `retry_after` (seconds) is honoured as the least
    wait before the next attempt.
    """

    def __init__(self, message: str = "", *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


RetryableError = TransientError
"""Alias of `TransientError`."""


@dataclass(frozen=True, slots=True)
class RetrySettings:
    """Default retries and backoff; `retries` applies to idempotent tools without their own."""

    retries: int = 2
    backoff_s: float = 0.1
    max_backoff_s: float = 2.0


@dataclass(slots=True, unsafe_hash=True)
class RetryOutcome:
    """What a call came to after its attempts: a value or the last error, and the count.

    Not changed once made, though not frozen: one is made per call, and a frozen dataclass sets
    each field through `object.__setattr__` (about four times the cost); it compares and
    hashes as a frozen one would."""

    value: Any
    error: BaseException | None
    attempts: int


def is_transient(exc: BaseException) -> bool:
    """Whether `exc` is worth a retry: TransientError, a connection error or timeout raised
    by the tool itself, an HTTP 429/503, or any exception with `retryable = True`."""
    if isinstance(exc, TransientError) or getattr(exc, "retryable", False) is True:
        return True
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    aiohttp = sys.modules.get("aiohttp")  # none of its errors exists before it is loaded
    if aiohttp is not None and isinstance(exc, aiohttp.ClientConnectionError):
        return True
    status = getattr(exc, "status", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return isinstance(status, int) and status in _TRANSIENT_STATUSES


def retries_for(tool: Tool, settings: RetrySettings) -> int:
    """How many retries a tool gets: its own count (the author's mark that retrying is
    safe), else the default when it is idempotent or read-only, else none."""
    metadata = tool.metadata
    if metadata.retries is not None:
        return metadata.retries
    if metadata.idempotent or Tag.READ_ONLY in metadata.tags:
        return settings.retries
    return 0


async def call_with_retries(
    attempt: Callable[[int], Awaitable[Any]],
    *,
    retries: int,
    settings: RetrySettings,
    deadline: Callable[[], float | None] | None = None,
) -> RetryOutcome:
    """Await `attempt(n)` for n = 1, 2, …, retrying transient errors with jittered
    exponential backoff, never sleeping past `deadline()` (a `time.monotonic()` value, or
    None for none; asked after each failure, since a call's clock starts when it runs).

    Raises:
        asyncio.CancelledError: the caller was cancelled.
    """
    number = 1
    while True:
        try:
            return RetryOutcome(await attempt(number), None, number)
        except Exception as exc:
            if number > retries or not is_transient(exc):
                return RetryOutcome(None, exc, number)
            delay = backoff_delay(number, settings, getattr(exc, "retry_after", None))
            ends = None if deadline is None else deadline()
            if ends is not None and time.monotonic() + delay >= ends:
                return RetryOutcome(None, exc, number)
        await asyncio.sleep(delay)
        number += 1


def backoff_delay(attempt: int, settings: RetrySettings, retry_after: float | None) -> float:
    """Full-jitter exponential backoff after attempt number `attempt`."""
    ceiling = min(settings.max_backoff_s, settings.backoff_s * 2 ** (attempt - 1))
    # Jitter keeps many callers that failed together from retrying together.
    delay = random.uniform(0, ceiling)
    return max(delay, retry_after or 0.0)


def retryable(
    retries: int = 3, *, backoff_s: float = 0.1, max_backoff_s: float = 2.0
) -> Callable[[F], F]:
    """Retry a sync or async function on transient errors (see `is_transient`).

    The function's signature is kept, so it can still be described as a tool.
    """
    settings = RetrySettings(retries=retries, backoff_s=backoff_s, max_backoff_s=max_backoff_s)

    def decorate(fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                outcome = await call_with_retries(
                    lambda _: fn(*args, **kwargs), retries=retries, settings=settings
                )
                if outcome.error is not None:
                    raise outcome.error
                return outcome.value

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            for number in range(1, retries + 2):
                try:
                    return fn(*args, **kwargs)
                except Exception as exc:
                    if number > retries or not is_transient(exc):
                        raise
                    delay = backoff_delay(number, settings, getattr(exc, "retry_after", None))
                time.sleep(delay)
            raise AssertionError("unreachable")

        return sync_wrapper  # type: ignore[return-value]

    return decorate
