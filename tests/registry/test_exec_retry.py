from __future__ import annotations

from collections.abc import Iterator

import aiohttp
import pytest

from registry import Executor, Tool, ToolCall
from registry.retry import RetrySettings, TransientError, is_transient, retryable

FAST = RetrySettings(retries=2, backoff_s=0.001, max_backoff_s=0.002)


@pytest.fixture
def executor() -> Iterator[Executor]:
    with Executor(default_timeout_s=5, retry=FAST) as ex:
        yield ex


def call(call_id: str = "c1") -> ToolCall:
    return ToolCall(call_id, "t", "{}")


class Flaky:
    """Fails with `error` for the first `failures` calls, then answers."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.calls = 0
        self.failures = failures
        self.error = error

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return f"ok after {self.calls}"


class HttpStatusError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


async def test_transient_errors_of_an_idempotent_tool_are_retried_and_counted(
    executor: Executor,
) -> None:
    flaky = Flaky(2, ConnectionResetError("reset"))
    tool = Tool.from_function(flaky, name="flaky", idempotent=True)
    result = await executor.execute(tool, call())
    assert result.content == "ok after 3"
    assert executor.log.records()[-1].attempts == 3


async def test_retries_give_up_after_the_limit_with_the_count(executor: Executor) -> None:
    flaky = Flaky(10, TransientError("busy"))
    tool = Tool.from_function(flaky, name="flaky", retries=1)
    result = await executor.execute(tool, call())
    assert result.content == "Error (exception): TransientError: busy (after 2 attempts)"
    assert flaky.calls == 2
    assert executor.log.records()[-1].attempts == 2


async def test_non_idempotent_tools_are_not_retried_unless_marked(executor: Executor) -> None:
    flaky = Flaky(1, ConnectionError("down"))
    tool = Tool.from_function(flaky, name="flaky")
    result = await executor.execute(tool, call())
    assert result.is_error
    assert flaky.calls == 1
    marked = Tool.from_function(Flaky(1, ConnectionError("down")), name="marked", retries=1)
    assert (await executor.execute(marked, call())).content == "ok after 2"


async def test_permanent_errors_are_reported_at_once(executor: Executor) -> None:
    flaky = Flaky(1, ValueError("bad city"))
    tool = Tool.from_function(flaky, name="flaky", idempotent=True, retries=5)
    result = await executor.execute(tool, call())
    assert result.content == "Error (exception): ValueError: bad city"
    assert flaky.calls == 1


async def test_retries_stop_at_the_deadline() -> None:
    slow = RetrySettings(retries=5, backoff_s=10, max_backoff_s=10)
    flaky = Flaky(10, TransientError("busy", retry_after=10))
    tool = Tool.from_function(flaky, name="flaky", retries=5, timeout_s=0.5)
    with Executor(retry=slow) as executor:
        result = await executor.execute(tool, call())
    assert flaky.calls == 1
    assert "TransientError: busy" in result.content


async def test_read_only_tools_count_as_idempotent(executor: Executor) -> None:
    flaky = Flaky(1, HttpStatusError(503))
    tool = Tool.from_function(flaky, name="flaky", tags=["read_only"])
    assert (await executor.execute(tool, call())).content == "ok after 2"


def test_what_counts_as_transient() -> None:
    assert is_transient(HttpStatusError(429))
    assert is_transient(HttpStatusError(503))
    assert not is_transient(HttpStatusError(500))
    assert is_transient(TimeoutError())
    assert not is_transient(KeyError("x"))
    # A tool's own aiohttp connection errors too (aiohttp is loaded only where it is used).
    assert is_transient(aiohttp.ClientConnectionError("reset"))
    assert is_transient(aiohttp.ServerDisconnectedError())
    assert not is_transient(aiohttp.ClientPayloadError("bad body"))


async def test_retryable_decorator_on_sync_and_async_functions() -> None:
    flaky = Flaky(2, TransientError("busy"))

    @retryable(3, backoff_s=0.001)
    def sync() -> str:
        return flaky()

    attempts = 0

    @retryable(1, backoff_s=0.001)
    async def run_async() -> str:
        nonlocal attempts
        attempts += 1
        raise TransientError("still busy")

    assert sync() == "ok after 3"
    with pytest.raises(TransientError):
        await run_async()
    assert attempts == 2
