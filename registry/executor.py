"""The executor: repairs and validates a call's arguments, runs the tool, reports the result."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any

from registry.arguments import bind_arguments, parse_arguments
from registry.backends import ExecutionBackend, InlineBackend, ThreadBackend
from registry.bounded import returns_at_once
from registry.calls import ErrorKind, ToolCall, ToolOutput, ToolResult
from registry.clock import call_clock
from registry.context import ToolCancelledError, ToolContext
from registry.errors import InvalidArgumentsError, RegistryError
from registry.execution_config import ExecutionConfig
from registry.execution_log import ExecutionLog, ExecutionRecord, redact, summarize
from registry.listeners import CallEvent, Listeners
from registry.output import DEFAULT_MAX_RESULT_SIZE, render_output, truncate
from registry.process_pool import ProcessBackend
from registry.repair import repair_call
from registry.retry import RetrySettings, call_with_retries, retries_for
from registry.task_timer import TaskTimer
from registry.thread_pool import DaemonThreadPool
from registry.tool import EXECUTION_MODES, ExecutionMode, Tool

__all__ = ["Executor"]

log = logging.getLogger("toolwire.execution")

_AT_ONCE_KEPT = 4096


@dataclasses.dataclass(slots=True)
class _Run:
    """What one call came to, for the result, the log and the listeners."""

    result: ToolResult
    attempts: int = 0
    mode: str | None = None
    repairs: tuple[str, ...] = ()


class Executor:
    """Runs tool calls: argument repair and validation, backends, timeouts, retries, log.

    Where a call runs: the tool's `execution_mode` if set; otherwise async tools run inline
    on the event loop and sync tools in `mode` (thread by default), except that a sync tool
    known to return at once (`registry.bounded`: it only formats its scalar arguments) runs
    inline instead of in a thread. A call's timeout starts
    when it starts running: time spent waiting for a free thread or worker process, or for
    a tool that runs one call at a time, is bounded only by the caller (who may cancel).
    A timed-out or cancelled call sets its `ToolContext.cancelled`; a process-mode call also
    has its worker killed, while a thread cannot be killed and runs on until it returns or
    heeds the flag, or the process exits (the threads are daemons). A result longer than
    the tool's `max_result_size`, else `max_result_size` here (1 MiB of text by default;
    None for no limit), is cut with a marker.

    Raises:
        RegistryError: a non-positive timeout or worker count, or an unknown mode.
    """

    def __init__(
        self,
        *,
        default_timeout_s: float = 30.0,
        max_workers: int = 16,
        mode: ExecutionMode = "thread",
        process_workers: int = 4,
        strict_arguments: bool = False,
        log_capacity: int = 1000,
        retry: RetrySettings | None = None,
        max_result_size: int | None = DEFAULT_MAX_RESULT_SIZE,
        listeners: Iterable[object] = (),
    ) -> None:
        if default_timeout_s <= 0 or max_workers <= 0 or process_workers <= 0:
            raise RegistryError("default_timeout_s and the worker counts must be positive")
        if mode not in EXECUTION_MODES:
            raise RegistryError(f"mode must be one of {', '.join(EXECUTION_MODES)}")
        self._default_timeout_s = default_timeout_s
        self._mode: ExecutionMode = mode
        self._strict = strict_arguments
        self._retry = retry or RetrySettings()
        self._max_result_size = max_result_size
        # Daemon threads: a sync tool that runs on past its timeout cannot hold the process
        # at exit (the stdlib pool joins its threads then).
        self._pool = DaemonThreadPool(max_workers, thread_name_prefix="toolwire")
        self._inline = InlineBackend()
        self._threads = ThreadBackend(self._pool, workers=max_workers)
        self._processes = ProcessBackend(workers=process_workers, fallback=self._threads)
        self.log = ExecutionLog(log_capacity)
        self.listeners = Listeners(listeners)
        self._at_once: dict[Callable[..., Any], bool] = {}
        # Per qualified name, so a tool that is not concurrency-safe runs one call at a time
        # across every request this executor serves.
        self._locks: dict[str, asyncio.Lock] = {}

    @classmethod
    def from_config(cls, config: ExecutionConfig, *, listeners: Iterable[object] = ()) -> Executor:
        """An executor set up as the `execution:` section says.

        Raises:
            RegistryError: see `Executor`.
        """
        return cls(
            default_timeout_s=config.timeout_s,
            max_workers=config.max_workers,
            mode=config.mode,
            process_workers=config.process_workers,
            strict_arguments=config.strict_arguments,
            log_capacity=config.log_capacity,
            retry=config.retry.settings(),
            max_result_size=config.max_result_size,
            listeners=listeners,
        )

    def mode_for(self, tool: Tool) -> ExecutionMode:
        """Where `tool` runs: its own mode, inline for async tools and for sync tools known
        to return at once (`registry.bounded`) when the default is threads, else the
        default."""
        if tool.metadata.execution_mode is not None:
            return tool.metadata.execution_mode
        if tool.is_async:
            return "inline"
        if self._mode == "thread" and self._returns_at_once(tool):
            return "inline"
        return self._mode

    def _returns_at_once(self, tool: Tool) -> bool:
        """`returns_at_once` for the tool's function, worked out once per function."""
        fn = tool.fn
        # Only arguments bound by the tool's model are sure to be of their annotated types.
        if fn is None or tool.context_parameter is not None or tool.arguments_model is None:
            return False
        known = self._at_once.get(fn)
        if known is None:
            known = returns_at_once(fn)
            if len(self._at_once) >= _AT_ONCE_KEPT:
                self._at_once.clear()  # functions of reloaded sources: keep the memo small
            self._at_once[fn] = known
        return known

    def backend_for(self, tool: Tool) -> ExecutionBackend:
        """The backend that runs `tool` (see `mode_for`)."""
        return self._backend(self.mode_for(tool))

    def _backend(self, mode: ExecutionMode) -> ExecutionBackend:
        if mode == "process":
            return self._processes
        return self._inline if mode == "inline" else self._threads

    async def execute(
        self,
        tool: Tool,
        call: ToolCall,
        *,
        request_id: str | None = None,
        note: str | None = None,
        timer: TaskTimer | None = None,
    ) -> ToolResult:
        """Run one call; failures come back as error results, never as exceptions.

        `note` is kept with the call's log record (e.g. the reason the model gave). `timer`:
        one of the calling task's own, if it has one: the call's timeout gets its timer
        beside it (`TaskTimer.beside`) rather than looked up.

        Raises:
            asyncio.CancelledError: the caller was cancelled; the call is abandoned.
        """
        started, wall = time.monotonic(), time.time()
        event = CallEvent(tool, call, request_id)
        if self.listeners.any:
            await self.listeners.before(event)
        # Unparsable text may hold a secret in any shape, so only its size is logged.
        logged: Any = {"_unparsed": f"{len(call.arguments)} characters"}
        try:
            parsed = parse_arguments(call.arguments)
            logged = redact(parsed)
            arguments, repairs = repair_call(
                parsed, tool.parameters, self._strict, tool=tool.qualified_name
            )
            if repairs:
                logged = redact(arguments)
            bound = bind_arguments(tool.arguments_model, arguments, strict=self._strict)
            if tool.arguments_check is not None:
                tool.arguments_check(bound)
        except InvalidArgumentsError as exc:
            run = _Run(ToolResult.error(call.id, exc.kind, exc.message))
        except Exception as exc:
            # A checker's own bug (a custom validator, a repair) still fails only this call.
            log.warning("checking the arguments of %s failed", tool.qualified_name, exc_info=True)
            message = f"the arguments could not be checked: {_describe(exc)}"
            run = _Run(ToolResult.error(call.id, ErrorKind.INVALID_ARGUMENTS, message))
        else:
            try:
                run = await self._run(tool, call, bound, request_id, timer)
            except asyncio.CancelledError:
                cancelled = ToolResult.error(call.id, ErrorKind.CANCELLED, "the caller went away")
                self._record(tool, call, request_id, logged, _Run(cancelled), started, wall, note)
                raise
            if repairs:
                run.repairs = tuple(str(r) for r in repairs)
        limit = tool.metadata.max_result_size or self._max_result_size
        if limit is not None and len(run.result.content) > limit:
            run.result = dataclasses.replace(
                run.result, content=truncate(run.result.content, limit)
            )
        self._record(tool, call, request_id, logged, run, started, wall, note)
        if self.listeners.any:
            await self.listeners.after(event, run.result)
        return run.result

    async def note_permission(
        self, tool: Tool, call: ToolCall, outcome: str, reason: str, *, request_id: str | None
    ) -> None:
        """Record a permission decision (denied, asked, approved, refused) in the log and
        tell the listeners; a call that never runs still leaves its trace."""
        if outcome != "approved":
            self.log.record(
                ExecutionRecord(
                    tool=tool.qualified_name,
                    call_id=call.id,
                    arguments=_logged_arguments(call.arguments),
                    result=summarize(reason),
                    duration_s=0.0,
                    error=outcome,
                    request_id=request_id,
                    attempts=0,
                    mode=None,
                    started_at=time.time(),
                )
            )
        if self.listeners.any:
            await self.listeners.permission(CallEvent(tool, call, request_id), outcome, reason)

    async def execute_many(
        self,
        items: Sequence[tuple[Tool, ToolCall]],
        *,
        request_id: str | None = None,
        notes: Mapping[str, str] | None = None,
        timer: TaskTimer | None = None,
    ) -> list[ToolResult]:
        """Run calls concurrently (unsafe tools one at a time); results in input order.
        `notes` are kept with the log records of the calls whose ids they name. `timer`: one
        of the calling task's own, for a lone call, which runs in that task (`execute`).

        Raises:
            asyncio.CancelledError: the caller was cancelled; every running call is cancelled.
        """
        notes = notes or {}
        if len(items) == 1:
            ((tool, call),) = items
            note = notes.get(call.id)
            return [await self.execute(tool, call, request_id=request_id, note=note, timer=timer)]
        results: list[ToolResult | None] = [None] * len(items)

        async def run_one(index: int, tool: Tool, call: ToolCall) -> None:
            note = notes.get(call.id)
            results[index] = await self.execute(tool, call, request_id=request_id, note=note)

        async with asyncio.TaskGroup() as group:
            for index, (tool, call) in enumerate(items):
                group.create_task(run_one(index, tool, call))
        return [result for result in results if result is not None]

    def close(self) -> None:
        """Stop the thread pool without waiting (queued calls are dropped); kill workers."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._processes.close()

    def __enter__(self) -> Executor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    async def _run(
        self,
        tool: Tool,
        call: ToolCall,
        arguments: dict[str, Any],
        request_id: str | None,
        timer: TaskTimer | None,
    ) -> _Run:
        mode = self.mode_for(tool)
        backend = self._backend(mode)
        clock = _Clock(tool.metadata.timeout_s or self._default_timeout_s, timer)
        contexts = clock.contexts

        async def attempt(number: int) -> Any:
            kwargs = arguments
            if tool.context_parameter is not None:
                context = ToolContext(call.id, clock.deadline, request_id, number)
                contexts.append(context)
                kwargs = {**arguments, tool.context_parameter: context}
            return await backend.run(tool, kwargs, on_start=clock.start)

        finished = False
        running = call_clock.set(clock)
        try:
            # A concurrency-safe tool (most) holds no lock: no context to enter for it.
            exclusive = None if tool.metadata.is_concurrency_safe else self._exclusive(tool)
            try:
                if exclusive is not None:
                    await exclusive.acquire()
                try:
                    outcome = await call_with_retries(
                        attempt,
                        retries=retries_for(tool, self._retry),
                        settings=self._retry,
                        deadline=lambda: clock.deadline,
                    )
                finally:
                    if exclusive is not None:
                        exclusive.release()
            except asyncio.CancelledError:
                if clock.timer.cancelled_it():
                    raise TimeoutError from None
                raise
            finally:
                clock.stop()
            finished = True
        except TimeoutError as exc:
            attempts = max(1, len(contexts))
            if not clock.expired:
                return _Run(_failure(call.id, exc, attempts), 1, mode)
            message = f"the tool did not finish within {clock.timeout_s:g} seconds"
            return _Run(ToolResult.error(call.id, ErrorKind.TIMEOUT, message), attempts, mode)
        finally:
            call_clock.reset(running)
            if not finished:
                # Tells sync code still running in a thread that nobody waits any more.
                for context in contexts:
                    context.cancelled.set()
        if outcome.error is not None:
            return _Run(_failure(call.id, outcome.error, outcome.attempts), outcome.attempts, mode)
        return _Run(_rendered(call.id, outcome.value), outcome.attempts, mode)

    def _exclusive(self, tool: Tool) -> asyncio.Lock:
        lock = self._locks.get(tool.qualified_name)
        if lock is None:  # not setdefault: that would build a lock per call
            lock = self._locks[tool.qualified_name] = asyncio.Lock()
        return lock

    def _record(
        self,
        tool: Tool,
        call: ToolCall,
        request_id: str | None,
        arguments: Any,
        run: _Run,
        started: float,
        wall: float,
        note: str | None = None,
    ) -> None:
        result = run.result
        # Positional: twelve keywords cost the call as much again.
        self.log.record(
            ExecutionRecord(
                tool.qualified_name,
                call.id,
                arguments,
                summarize(result.content),
                time.monotonic() - started,
                result.error_kind,
                request_id,
                run.attempts,
                run.mode,
                run.repairs,
                wall,
                note,
            )
        )


def _logged_arguments(raw: str | dict[str, Any]) -> Any:
    """A call's arguments as the log keeps them: parsed and redacted, or only their size."""
    try:
        return redact(parse_arguments(raw))
    except InvalidArgumentsError:
        return {"_unparsed": f"{len(raw)} characters"}


class _Clock:
    """A call's timeout, started when the call starts running (`start`, called by the
    backend): waiting for the tool (one call at a time) or for a free worker is bounded
    only by the caller's own budget. Its timer cancels the task that made it (a
    `TaskTimer`: an `asyncio.timeout` scope costs three more `getpid` system calls), made
    beside `beside` (another timer of that task) when there is one."""

    def __init__(self, timeout_s: float, beside: TaskTimer | None = None) -> None:
        self.timeout_s = timeout_s
        self.deadline: float | None = None
        """`time.monotonic()` value when the call times out; None until it starts."""
        self.contexts: list[ToolContext] = []
        """One per attempt, for tools that take a context: each learns the deadline."""
        self.timer = TaskTimer.current() if beside is None else beside.beside()
        self._stopped = False

    @property
    def expired(self) -> bool:
        """The timeout cancelled the call."""
        return self.timer.expired

    def start(self) -> None:
        if self.deadline is None:
            self.deadline = time.monotonic() + self.timeout_s
            self.timer.set(self.timeout_s)
        if self.contexts:
            self.contexts[-1].deadline = self.deadline

    def stop(self) -> None:
        """The call is over: nothing more to time."""
        self._stopped = True
        self.timer.clear()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Time spent inside does not count against the timeout (see `registry.clock`)."""
        if self.deadline is None or not self.timer.running:
            yield
            return
        self.timer.clear()
        started = time.monotonic()
        try:
            yield
        finally:
            self.deadline += time.monotonic() - started
            for context in self.contexts:
                context.deadline = self.deadline
            if not self._stopped:  # the call ended meanwhile: nothing to time
                self.timer.set(self.deadline - time.monotonic())


def _rendered(call_id: str, value: Any) -> ToolResult:
    try:
        if isinstance(value, ToolOutput):
            return _from_output(call_id, value)
        return ToolResult(call_id, render_output(value))
    except Exception as exc:
        # A result whose serializer or __str__ raises is the tool's failure, not ours.
        message = f"the tool's result cannot be rendered: {_describe(exc)}"
        return ToolResult.error(call_id, ErrorKind.EXCEPTION, message)


def _failure(call_id: str, exc: BaseException, attempts: int) -> ToolResult:
    kind = ErrorKind.CANCELLED if isinstance(exc, ToolCancelledError) else ErrorKind.EXCEPTION
    message = _describe(exc)
    if attempts > 1:
        message += f" (after {attempts} attempts)"
    return ToolResult.error(call_id, kind, message)


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        # An exception whose __str__ raises is still reported, by its type.
        text = ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _from_output(call_id: str, output: ToolOutput) -> ToolResult:
    if output.is_error:
        failed = ToolResult.error(call_id, ErrorKind.TOOL_ERROR, output.text)
        return dataclasses.replace(failed, attachments=output.attachments)
    return ToolResult(call_id, output.text, attachments=output.attachments)
