"""The tool round's short paths: each gives what the general path gives, and is the one taken.

Listeners called without a coroutine per sync hook, an object schema repaired without
building its type set, arguments bound without pydantic's wrappers, IP literals judged once
per host, and a concurrency-safe tool run with no lock to enter.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any

import pytest
from pydantic import BaseModel, Field

import registry.addresses as addresses
import registry.repair as repair
from registry import Executor, Tool, ToolCall, ToolRegistry, ToolResult
from registry.addresses import AddressGuard, BlockedAddressError
from registry.arguments import bind_arguments
from registry.listeners import CallEvent, Listeners

_seen: contextvars.ContextVar[str | None] = contextvars.ContextVar("seen", default=None)


def echo(text: str) -> str:
    """Echo."""
    return f"echo: {text}"


async def test_a_sync_listener_runs_in_the_callers_context_and_its_errors_are_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    order: list[str] = []

    class Sync:
        def before_call(self, event: CallEvent) -> None:
            _seen.set(event.call.id)  # as the telemetry's listener keeps its running call

        def after_call(self, event: CallEvent, result: ToolResult) -> None:
            order.append(f"sync.after:{_seen.get()}")

    class Async:
        async def after_call(self, event: CallEvent, result: ToolResult) -> None:
            await asyncio.sleep(0)
            order.append(f"async.after:{_seen.get()}")
            raise ValueError("broken when awaited")

    class ReturnsAwaitable:
        def after_call(self, event: CallEvent, result: ToolResult) -> Any:
            async def later() -> None:
                order.append("awaitable.after")

            return later()

    class Broken:
        def before_call(self, event: CallEvent) -> None:
            raise RuntimeError("broken when called")

    listeners = [Sync(), Broken(), Async(), ReturnsAwaitable()]
    with (
        caplog.at_level(logging.ERROR, "toolwire.execution"),
        Executor(listeners=listeners) as executor,
    ):
        result = await executor.execute(
            Tool.from_function(echo), ToolCall("c1", "echo", '{"text": "hi"}')
        )
    assert result.content == "echo: hi" and not result.is_error
    assert order == ["awaitable.after", "async.after:c1", "sync.after:c1"]
    failures = [r.getMessage() for r in caplog.records]
    assert len(failures) == 2 and all("call listener" in m for m in failures)


async def test_listeners_make_no_coroutine_for_a_sync_hook() -> None:
    made: list[str] = []

    class Sync:
        def before_call(self, event: CallEvent) -> None:
            made.append("before")

    listeners = Listeners([Sync()])
    tool = Tool.from_function(echo)
    event = CallEvent(tool, ToolCall("c", "echo", "{}"), None)
    step = listeners.before(event)
    # One send runs the whole notification: nothing was awaited on the way.
    with pytest.raises(StopIteration):
        step.send(None)
    assert made == ["before"]


@pytest.mark.parametrize(
    "arguments",
    [
        {"city": "Oslo", "days": "3", "metric": "true"},
        {"City": "Oslo", "days": 3, "extra": {"a": 1}},
        {"nested": {"n": "4"}, "tags": "[1, 2]"},
        {},
    ],
)
def test_a_plain_object_schema_is_repaired_as_the_general_path_repairs_it(
    arguments: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "metric": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "integer"}},
            "nested": {"type": "object", "properties": {"n": {"type": "integer"}}},
        },
    }
    # The same schema wrapped in an alternative takes the general path.
    general = {"anyOf": [schema]}
    slow, slow_repairs = repair.repair_call(dict(arguments), general)
    branches = 0
    real_branch = repair._Repairer._branch

    def counted(self: Any, *args: Any) -> Any:
        nonlocal branches
        branches += 1
        return real_branch(self, *args)

    monkeypatch.setattr(repair._Repairer, "_branch", counted)
    fast, fast_repairs = repair.repair_call(dict(arguments), schema)
    assert fast == slow
    assert [(r.kind, r.detail) for r in fast_repairs] == [(r.kind, r.detail) for r in slow_repairs]
    # Only the array (not a plain object) still asks for its branch.
    assert branches == (1 if "tags" in arguments else 0)


class Trip(BaseModel):
    from_: str = Field(alias="from")
    days: int = 1


def test_bound_arguments_are_those_of_pydantics_public_api() -> None:
    arguments = {"from": "Oslo", "days": "2"}
    instance = Trip.model_validate(arguments)
    expected = {
        (info.alias or name): getattr(instance, name) for name, info in Trip.model_fields.items()
    }
    assert bind_arguments(Trip, arguments) == expected == {"from": "Oslo", "days": 2}


def test_an_ip_literal_is_parsed_once_per_host_and_judged_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[str] = []
    real = addresses._literal

    def counted(host: str) -> Any:
        parsed.append(host)
        return real(host)

    monkeypatch.setattr(addresses, "_literal", counted)
    guard = AddressGuard()
    for _ in range(3):
        with pytest.raises(BlockedAddressError):
            guard.check_literal("127.0.0.1")
        guard.check_literal("8.8.8.8")
        guard.check_literal("api.example.com")  # a name: judged when it is resolved
    assert parsed == ["127.0.0.1", "8.8.8.8", "api.example.com"]
    guard.allow_private = True  # a reloaded spec: the kept verdict meets the new setting
    guard.check_literal("127.0.0.1")
    guard.allow_private = False
    with pytest.raises(BlockedAddressError):
        guard.check_literal("[::1]")


def test_the_kept_literals_stay_few(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(addresses, "_LITERALS_KEPT", 4)
    guard = AddressGuard()
    for n in range(10):
        guard.check_literal(f"8.8.8.{n}")
    assert len(guard._literals) <= 4
    with pytest.raises(BlockedAddressError):
        guard.check_literal("10.0.0.1")


async def test_a_concurrency_safe_tool_enters_no_lock_and_an_unsafe_one_runs_alone() -> None:
    running = 0
    most = 0

    async def slow(text: str) -> str:
        """Slow."""
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01)
        running -= 1
        return text

    with Executor() as executor:
        safe = Tool.from_function(slow)
        calls = [ToolCall(f"s{i}", "slow", {"text": str(i)}) for i in range(4)]
        results = await executor.execute_many([(safe, c) for c in calls])
        assert [r.content for r in results] == ["0", "1", "2", "3"]
        assert most == 4 and not executor._locks
        most = 0
        unsafe = Tool.from_function(slow, is_concurrency_safe=False)
        results = await executor.execute_many([(unsafe, c) for c in calls])
        assert [r.content for r in results] == ["0", "1", "2", "3"]
        assert most == 1 and list(executor._locks) == [unsafe.qualified_name]
        assert not executor._locks[unsafe.qualified_name].locked()


def test_withheld_gives_both_reasons_in_one_lookup() -> None:
    tools = ToolRegistry()
    tool = tools.register(echo)
    name = tool.qualified_name
    assert tools.withheld(name) == (tools.held_reason(name), tools.disabled_reason(name))
    assert tools.withheld(name) == (None, None)
    tools.disable(name, "maintenance")
    tools.hold(name, "definition changed")
    assert tools.withheld(name) == ("definition changed", "maintenance")
    assert tools.withheld("absent") is None


def test_listeners_say_whether_there_is_one_as_they_change() -> None:
    class Hook:
        def after_call(self, event: CallEvent, result: ToolResult) -> None: ...

    first, second = Hook(), Hook()
    listeners = Listeners()
    assert not listeners.any and not listeners
    listeners.add(first)
    listeners.add(second)
    assert listeners.any and listeners
    listeners.remove(first)
    assert listeners.any
    listeners.remove(second)
    listeners.remove(second)  # absent: nothing changes
    assert not listeners.any and not listeners
    assert Listeners([first]).any
