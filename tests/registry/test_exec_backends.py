from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from registry import Executor, Tool, ToolCall, ToolContext
from registry.sync_bridge import call_async, call_sync, run_sync

DEADLINE_S = 60.0
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def executor() -> Iterator[Executor]:
    with Executor(default_timeout_s=DEADLINE_S, process_workers=2) as ex:
        yield ex


def call(arguments: str | dict[str, object] = "{}", call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, name="t", arguments=arguments)


def worker_pid() -> int:
    return os.getpid()


def send_pid_and_hang(fifo: str) -> str:
    with open(fifo, "w") as out:
        out.write(str(os.getpid()))
    time.sleep(60)
    return "never"


async def async_square(x: int) -> int:
    await asyncio.sleep(0)
    return x * x


def fails() -> None:
    raise LookupError("no such record")


def parse_count(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="count", exit_on_error=False)
    parser.add_argument("--count", type=int, required=True)
    # exit_on_error=False does not cover a missing required option: argparse still exits.
    return int(parser.parse_args(argv).count)


async def exit_async() -> None:
    await asyncio.sleep(0)
    sys.exit("bye")


def interrupt() -> None:
    raise KeyboardInterrupt


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


async def wait_until_dead(pid: int) -> None:
    async with asyncio.timeout(DEADLINE_S):
        # A process's death has no event to await here; poll it, bounded by the deadline.
        while alive(pid):  # noqa: ASYNC110
            await asyncio.sleep(0.02)


async def read_fifo(fifo: Path) -> int:
    """The pid a worker wrote; non-blocking, so a worker that never writes fails the test."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    data = b""
    try:
        async with asyncio.timeout(DEADLINE_S):
            while not data.strip():
                with contextlib.suppress(BlockingIOError):
                    data += os.read(fd, 64)
                await asyncio.sleep(0.01)
    finally:
        os.close(fd)
    return int(data)


def process_tool(fn: object, **metadata: object) -> Tool:
    return Tool.from_function(fn, execution_mode="process", **metadata)  # type: ignore[arg-type]


async def test_process_mode_runs_in_another_process(executor: Executor) -> None:
    result = await executor.execute(process_tool(worker_pid), call())
    assert not result.is_error
    assert int(result.content) != os.getpid()
    assert executor.log.records()[-1].mode == "process"


async def test_process_mode_runs_async_tools_and_reports_exceptions(executor: Executor) -> None:
    square = await executor.execute(process_tool(async_square), call({"x": 7}))
    failed = await executor.execute(process_tool(fails), call())
    assert square.content == "49"
    assert failed.content == "Error (exception): LookupError: no such record"


async def test_default_mode_process_covers_sync_tools_only() -> None:
    with Executor(mode="process", process_workers=1) as executor:
        sync_pid = await executor.execute(Tool.from_function(worker_pid), call())
        assert int(sync_pid.content) != os.getpid()
        assert executor.mode_for(Tool.from_function(async_square)) == "inline"


async def test_a_worker_killed_mid_call_fails_that_call_and_is_replaced(
    executor: Executor, tmp_path: Path
) -> None:
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    hanging = asyncio.create_task(
        executor.execute(process_tool(send_pid_and_hang), call({"fifo": str(fifo)}))
    )
    pid = await read_fifo(fifo)
    os.kill(pid, signal.SIGKILL)
    async with asyncio.timeout(DEADLINE_S):
        result = await hanging
    assert result.error_kind == "exception"
    assert "WorkerCrashedError" in result.content
    assert "killed by signal 9" in result.content
    again = await executor.execute(process_tool(worker_pid), call())
    assert not again.is_error
    assert int(again.content) != pid


@pytest.mark.timeout(120)  # a missing timeout fails here, not at the suite's limit
async def test_a_hanging_process_call_times_out_and_its_worker_is_killed(
    executor: Executor, tmp_path: Path
) -> None:
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    # A warm worker takes the call: a cold one's start (a Python, this test module's
    # imports) counts against the timeout and can take seconds on a loaded machine.
    warm = await executor.execute(process_tool(worker_pid), call())
    tool = process_tool(send_pid_and_hang, timeout_s=4.0)
    running = asyncio.create_task(executor.execute(tool, call({"fifo": str(fifo)})))
    pid = await read_fifo(fifo)
    result = await running
    assert pid == int(warm.content)
    assert result.error_kind == "timeout"
    await wait_until_dead(pid)


@pytest.mark.parametrize("mode", ["inline", "thread", "process"])
async def test_a_tool_that_exits_fails_only_its_call_in_every_mode(
    executor: Executor, mode: str
) -> None:
    def tool(fn: object) -> Tool:
        return Tool.from_function(fn, execution_mode=mode)  # type: ignore[arg-type]

    bad_argv = await executor.execute(tool(parse_count), call({"argv": []}))
    exited = await executor.execute(tool(exit_async), call())
    interrupted = await executor.execute(tool(interrupt), call())
    assert bad_argv.error_kind == "exception"
    assert bad_argv.content == "Error (exception): RuntimeError: the tool exited: SystemExit(2)"
    assert exited.content == "Error (exception): RuntimeError: the tool exited: SystemExit('bye')"
    assert interrupted.error_kind == "exception"
    assert "KeyboardInterrupt" in interrupted.content
    again = await executor.execute(tool(parse_count), call({"argv": ["--count", "3"]}))
    assert again.content == "3"


def numbered(n: int) -> object:
    def number() -> int:
        return n

    return number


async def test_a_worker_that_evicted_a_function_is_sent_it_again() -> None:
    # More distinct functions than a worker keeps (128), through the one worker.
    tools = [process_tool(numbered(n), name=f"n{n}") for n in range(130)]
    with Executor(default_timeout_s=DEADLINE_S, process_workers=1) as executor:
        first = [(await executor.execute(tool, call())).content for tool in tools]
        again = [(await executor.execute(tool, call())).content for tool in tools[:3]]
    assert first == [str(n) for n in range(130)]
    assert again == ["0", "1", "2"]


async def test_an_unpicklable_closure_falls_back_to_threads_logged_once(
    executor: Executor, caplog: pytest.LogCaptureFixture
) -> None:
    lock = threading.Lock()

    def guarded() -> str:
        with lock:
            return threading.current_thread().name

    tool = process_tool(guarded)
    with caplog.at_level(logging.WARNING, logger="toolwire.execution"):
        first = await executor.execute(tool, call())
        second = await executor.execute(tool, call())
    assert first.content.startswith("toolwire")
    assert second.content.startswith("toolwire")
    warnings = [r for r in caplog.records if "cannot be pickled" in r.getMessage()]
    assert len(warnings) == 1


async def test_a_hanging_sync_tool_times_out_and_sees_the_cancel_flag(executor: Executor) -> None:
    saw_cancel = threading.Event()

    def hang(ctx: ToolContext) -> str:
        if ctx.cancelled.wait(DEADLINE_S):
            saw_cancel.set()
        return "done"

    tool = Tool.from_function(hang, timeout_s=0.2)
    assert "ctx" not in tool.parameters["properties"]
    result = await executor.execute(tool, call())
    assert result.error_kind == "timeout"
    assert await asyncio.to_thread(saw_cancel.wait, DEADLINE_S)


@pytest.mark.timeout(60)  # a missing timeout fails here, not at the suite's limit
async def test_a_hanging_async_tool_times_out_and_is_cancelled(executor: Executor) -> None:
    cancelled = asyncio.Event()

    async def hang() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    result = await executor.execute(Tool.from_function(hang, timeout_s=0.2), call())
    assert result.content == "Error (timeout): the tool did not finish within 0.2 seconds"
    assert cancelled.is_set()


async def test_cancelling_the_caller_reaches_a_thread_tool_through_its_context(
    executor: Executor,
) -> None:
    started, saw_cancel = threading.Event(), threading.Event()
    seen: list[ToolContext] = []

    def wait_for_cancel(ctx: ToolContext) -> str:
        seen.append(ctx)
        started.set()
        if ctx.cancelled.wait(DEADLINE_S):
            saw_cancel.set()
        return "done"

    tool = Tool.from_function(wait_for_cancel)
    task = asyncio.create_task(executor.execute(tool, call(call_id="abc"), request_id="r1"))
    assert await asyncio.to_thread(started.wait, DEADLINE_S)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(saw_cancel.wait, DEADLINE_S)
    context = seen[0]
    assert (context.call_id, context.request_id, context.attempt) == ("abc", "r1", 1)
    assert context.deadline is not None
    assert executor.log.records()[-1].error == "cancelled"


async def test_async_tools_receive_the_context_too(executor: Executor) -> None:
    async def remaining(ctx: ToolContext) -> bool:
        left = ctx.remaining()
        return left is not None and 0 < left <= DEADLINE_S

    result = await executor.execute(Tool.from_function(remaining), call())
    assert result.content == "true"


async def test_inline_and_thread_modes_for_sync_and_async_tools(executor: Executor) -> None:
    def where() -> str:
        return threading.current_thread().name

    async def where_async() -> str:
        return threading.current_thread().name

    inline = Tool.from_function(where, execution_mode="inline")
    threaded_async = Tool.from_function(where_async, execution_mode="thread")
    assert (await executor.execute(inline, call())).content == threading.current_thread().name
    assert (await executor.execute(threaded_async, call())).content.startswith("toolwire")


def test_run_sync_outside_and_inside_a_running_loop() -> None:
    assert run_sync(async_square(3)) == 9
    assert call_sync(async_square, 4) == 16
    assert call_sync(worker_pid) == os.getpid()

    async def inside() -> int:
        return call_sync(async_square, 5) + await call_async(worker_pid) * 0

    assert asyncio.run(inside()) == 25


async def test_call_async_runs_sync_functions_in_a_thread() -> None:
    def name() -> str:
        return threading.current_thread().name

    assert await call_async(name) != threading.current_thread().name
    assert await call_async(async_square, 6) == 36


def test_workers_die_with_their_parent() -> None:
    script = textwrap.dedent(
        """
        import asyncio, os, sys, time
        from registry import Executor, Tool, ToolCall

        def hang() -> None:
            print(os.getpid(), file=sys.stderr, flush=True)
            time.sleep(60)

        async def main() -> None:
            executor = Executor(process_workers=1)
            tool = Tool.from_function(hang, execution_mode="process")
            await executor.execute(tool, ToolCall("c", "hang", "{}"))

        if __name__ == "__main__":
            asyncio.run(main())
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], cwd=REPO, stderr=subprocess.PIPE, text=True
    )
    try:
        assert parent.stderr is not None
        pid = int(parent.stderr.readline())
        assert alive(pid)
        parent.kill()
        parent.wait()
        asyncio.run(wait_until_dead(pid))
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if parent.stderr is not None:
            parent.stderr.close()
