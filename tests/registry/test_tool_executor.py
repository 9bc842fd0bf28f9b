from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pytest
from pydantic import BaseModel

from registry import Executor, Tool, ToolCall, ToolContext, ToolResult
from registry.json_schemas import SchemaArguments

DEADLINE_S = 5.0


@pytest.fixture
def executor() -> Iterator[Executor]:
    with Executor(default_timeout_s=DEADLINE_S) as ex:
        yield ex


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown so that hanging worker threads end and the process can exit."""
    event = threading.Event()
    yield event
    event.set()


def call(arguments: str | dict[str, object] = "{}", call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, name="t", arguments=arguments)


def add(a: int, b: int) -> int:
    return a + b


async def add_async(a: int, b: int) -> int:
    return a + b


async def test_sync_and_async_tools(executor: Executor) -> None:
    sync_result = await executor.execute(Tool.from_function(add), call('{"a": 1, "b": "2"}'))
    async_result = await executor.execute(Tool.from_function(add_async), call({"a": 2, "b": 3}))
    assert sync_result == ToolResult(call_id="c1", content="3")
    assert async_result == ToolResult(call_id="c1", content="5")


async def test_sync_tools_run_off_the_event_loop(executor: Executor) -> None:
    def where() -> str:
        return threading.current_thread().name

    result = await executor.execute(Tool.from_function(where), call())
    assert result.content != threading.current_thread().name
    assert result.content.startswith("toolwire")


async def test_invalid_json(executor: Executor) -> None:
    result = await executor.execute(Tool.from_function(add), call('{"a": 1,'))
    assert result.is_error
    assert result.error_kind == "invalid_json"
    assert result.content.startswith("Error (invalid_json): arguments are not valid JSON")


async def test_arguments_that_are_not_an_object(executor: Executor) -> None:
    result = await executor.execute(Tool.from_function(add), call("[1, 2]"))
    assert result.error_kind == "invalid_arguments"


async def test_schema_violation(executor: Executor) -> None:
    result = await executor.execute(Tool.from_function(add), call('{"a": 1}'))
    assert result == ToolResult.error("c1", "invalid_arguments", "field 'b' is required")
    assert result.content == "Error (invalid_arguments): field 'b' is required"


async def test_exception_is_reported_without_traceback(executor: Executor) -> None:
    def boom() -> None:
        raise ValueError("no such city")

    async def boom_async() -> None:
        raise KeyError("k")

    result = await executor.execute(Tool.from_function(boom), call())
    assert result.error_kind == "exception"
    assert result.content == "Error (exception): ValueError: no such city"
    result = await executor.execute(Tool.from_function(boom_async), call())
    assert result.content == "Error (exception): KeyError: 'k'"


async def test_tool_raising_timeout_error_is_an_exception_not_a_timeout(
    executor: Executor,
) -> None:
    async def slow_upstream() -> None:
        raise TimeoutError("upstream took too long")

    result = await executor.execute(Tool.from_function(slow_upstream), call())
    assert result.error_kind == "exception"
    assert "TimeoutError: upstream took too long" in result.content


@pytest.mark.timeout(DEADLINE_S)  # a missing timeout fails here, not at 20 s
async def test_timeout_of_a_hanging_sync_tool(executor: Executor, release: threading.Event) -> None:
    def hang() -> None:
        release.wait(DEADLINE_S * 4)

    tool = Tool.from_function(hang, timeout_s=0.2)
    started = time.monotonic()
    result = await executor.execute(tool, call())
    assert time.monotonic() - started < DEADLINE_S
    assert result.error_kind == "timeout"
    assert result.content == "Error (timeout): the tool did not finish within 0.2 seconds"


@pytest.mark.timeout(DEADLINE_S)  # a missing timeout fails here, not at the suite's limit
async def test_timeout_of_a_hanging_async_tool() -> None:
    async def hang() -> None:
        await asyncio.Event().wait()

    with Executor(default_timeout_s=0.2) as executor:
        started = time.monotonic()
        result = await executor.execute(Tool.from_function(hang), call())
    assert time.monotonic() - started < DEADLINE_S
    assert result.error_kind == "timeout"


async def test_cancelling_the_caller_cancels_the_tool(executor: Executor) -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def wait_forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    task = asyncio.create_task(executor.execute(Tool.from_function(wait_forever), call()))
    async with asyncio.timeout(DEADLINE_S):
        await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()


async def test_cancelling_execute_many_cancels_every_call(
    executor: Executor, release: threading.Event
) -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()
    thread_started = threading.Event()

    async def wait_forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def block() -> None:
        thread_started.set()
        release.wait(DEADLINE_S * 4)

    items = [
        (Tool.from_function(wait_forever), call(call_id="a")),
        (Tool.from_function(block), call(call_id="b")),
    ]
    task = asyncio.create_task(executor.execute_many(items))
    async with asyncio.timeout(DEADLINE_S):
        await started.wait()
        await asyncio.to_thread(thread_started.wait, DEADLINE_S)
    task.cancel()
    async with asyncio.timeout(DEADLINE_S):
        with pytest.raises(asyncio.CancelledError):
            await task
    assert cancelled.is_set()


async def test_unsafe_tool_runs_one_call_at_a_time(executor: Executor) -> None:
    active = 0
    peak = 0

    async def write(n: int) -> int:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return n

    tool = Tool.from_function(write, is_concurrency_safe=False)
    batch = [(tool, call({"n": i}, call_id=str(i))) for i in range(4)]
    first, second = await asyncio.gather(executor.execute_many(batch), executor.execute_many(batch))
    assert peak == 1
    assert [r.content for r in first] == ["0", "1", "2", "3"]
    assert [r.call_id for r in second] == ["0", "1", "2", "3"]


async def test_unsafe_sync_tool_runs_one_call_at_a_time(executor: Executor) -> None:
    lock = threading.Lock()
    active = 0
    peak = 0

    def write() -> None:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.01)
        with lock:
            active -= 1

    tool = Tool.from_function(write, is_concurrency_safe=False)
    results = await executor.execute_many([(tool, call(call_id=str(i))) for i in range(4)])
    assert peak == 1
    assert not any(r.is_error for r in results)


async def test_an_unsafe_thread_tool_stays_one_at_a_time_past_timeouts(
    executor: Executor,
) -> None:
    lock = threading.Lock()
    active = peak = runs = 0

    def write(ctx: ToolContext, patient: bool = False) -> None:
        nonlocal active, peak, runs
        with lock:
            active, runs = active + 1, runs + 1
            peak = max(peak, active)
        if not patient:
            # Past the call's timeout, however late a loaded machine notices it: until the
            # call is cancelled, then a while longer.
            ctx.cancelled.wait(DEADLINE_S)
            time.sleep(0.3)
        with lock:
            active -= 1

    hasty = Tool.from_function(write, is_concurrency_safe=False, timeout_s=0.2)
    results = await executor.execute_many([(hasty, call(call_id=str(i))) for i in range(3)])
    assert [r.error_kind for r in results] == ["timeout"] * 3
    # Each call waited for the previous call's thread to return, then ran for its timeout;
    # the last one's thread still runs, and a patient call waits for it too.
    patient = await executor.execute(
        hasty.with_metadata(timeout_s=DEADLINE_S), call({"patient": True})
    )
    assert not patient.is_error
    assert peak == 1
    assert runs == 4


async def test_safe_tools_run_in_parallel(executor: Executor) -> None:
    barrier = asyncio.Barrier(3)
    thread_barrier = threading.Barrier(3, timeout=DEADLINE_S)

    async def meet(n: int) -> int:
        async with asyncio.timeout(DEADLINE_S):
            await barrier.wait()
        return n

    def meet_in_thread(n: int) -> int:
        thread_barrier.wait()
        return n

    for fn in (meet, meet_in_thread):
        tool = Tool.from_function(fn)
        results = await executor.execute_many([(tool, call({"n": i}, str(i))) for i in range(3)])
        assert [r.content for r in results] == ["0", "1", "2"]
        assert [r.call_id for r in results] == ["0", "1", "2"]


async def test_execute_many_keeps_input_order_with_mixed_results(executor: Executor) -> None:
    items = [
        (Tool.from_function(add), call({"a": 1, "b": 1}, "x")),
        (Tool.from_function(add_async), call("{", "y")),
        (Tool.from_function(add), call({"a": 2, "b": 2}, "z")),
    ]
    results = await executor.execute_many(items)
    assert [(r.call_id, r.content, r.error_kind) for r in results] == [
        ("x", "2", None),
        ("y", results[1].content, "invalid_json"),
        ("z", "4", None),
    ]
    assert await executor.execute_many([]) == []


class Weather(BaseModel):
    city: str
    temp: float


@dataclass
class Point:
    x: int
    y: int


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain text", "plain text"),
        ("", "(no output)"),
        (None, "(no output)"),
        ({"a": [1, 2]}, '{"a":[1,2]}'),
        ([1, "two"], '[1,"two"]'),
        (Weather(city="Oslo", temp=3.5), '{"city":"Oslo","temp":3.5}'),
        (Point(1, 2), '{"x":1,"y":2}'),
        ({"when": Weather(city="A", temp=1)}, '{"when":{"city":"A","temp":1.0}}'),
        ({1: {3}}, '{"1":[3]}'),
        ("héllo".encode(), "héllo"),
        (b"\xff\xfe", "(2 bytes of binary data)"),
        (42, "42"),
        (True, "true"),
    ],
)
async def test_result_normalization(executor: Executor, value: object, expected: str) -> None:
    def produce() -> object:
        return value

    result = await executor.execute(Tool.from_function(produce), call())
    assert result == ToolResult(call_id="c1", content=expected)


async def test_truncation_marks_what_was_cut(executor: Executor) -> None:
    def big() -> str:
        return "x" * 1000

    def fails() -> None:
        raise RuntimeError("y" * 1000)

    result = await executor.execute(Tool.from_function(big, max_result_size=100), call())
    assert len(result.content) <= 100
    assert result.content.startswith("x" * 50)
    kept = result.content.count("x")
    assert result.content.endswith(f"…[truncated {1000 - kept} characters]")

    error = await executor.execute(Tool.from_function(fails, max_result_size=100), call())
    assert error.is_error
    assert error.error_kind == "exception"
    assert len(error.content) <= 100
    assert "truncated" in error.content

    short = await executor.execute(Tool.from_function(big, max_result_size=1000), call())
    assert short.content == "x" * 1000


async def test_an_integer_string_too_long_to_convert_is_refused_not_raised(
    executor: Executor,
) -> None:
    result = await executor.execute(Tool.from_function(add), call({"a": "9" * 5000, "b": 1}))
    assert result.error_kind == "invalid_arguments"
    assert "field 'a'" in result.content


def schema_tool(schema: dict[str, object]) -> Tool:
    def echo(**arguments: object) -> object:
        return arguments

    return Tool(
        name="t",
        description="",
        parameters=schema,
        fn=echo,
        arguments_check=SchemaArguments(schema),
    )


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}},
        {"type": "object", "properties": {"a": {"$ref": "https://example.invalid/a.json"}}},
        {"type": "object", "$defs": {"loop": {"$ref": "#/$defs/loop"}}, "$ref": "#/$defs/loop"},
    ],
)
async def test_a_schema_whose_references_cannot_resolve_fails_each_call(
    executor: Executor, schema: dict[str, object]
) -> None:
    result = await executor.execute(schema_tool(schema), call({"a": 1}))
    assert result.error_kind == "invalid_arguments"
    assert "schema" in result.content


class Opaque:
    def __str__(self) -> str:
        raise RuntimeError("no text for this")


class Holder(BaseModel, arbitrary_types_allowed=True):
    thing: Opaque


async def test_a_result_that_cannot_be_rendered_is_an_exception_result(
    executor: Executor,
) -> None:
    def opaque() -> object:
        return Opaque()

    def model() -> Holder:
        return Holder(thing=Opaque())

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no text")

    def raises_unprintable() -> None:
        raise Unprintable

    for fn in (opaque, model):
        result = await executor.execute(Tool.from_function(fn), call())
        assert result.error_kind == "exception"
        assert result.content.startswith("Error (exception): the tool's result cannot be rendered")
    failed = await executor.execute(Tool.from_function(raises_unprintable), call())
    assert failed.content == "Error (exception): Unprintable"


async def test_a_failing_argument_check_is_a_result_and_execute_many_never_raises(
    executor: Executor,
) -> None:
    def check(arguments: dict[str, object]) -> None:
        raise KeyError("checker bug")

    broken = replace(Tool.from_function(add), arguments_check=check)
    results = await executor.execute_many(
        [
            (broken, call({"a": 1, "b": 2}, "x")),
            (Tool.from_function(add), call({"a": "9" * 5000, "b": 1}, "y")),
            (Tool.from_function(add), call({"a": 1, "b": 2}, "z")),
        ]
    )
    assert [r.error_kind for r in results] == ["invalid_arguments", "invalid_arguments", None]
    assert results[0].content == (
        "Error (invalid_arguments): the arguments could not be checked: KeyError: 'checker bug'"
    )
