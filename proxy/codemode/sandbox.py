"""Programs run in the pydantic-monty sandbox (the only module that imports it).

A program is Python the model wrote. It sees no filesystem, network, host modules or host
objects: only the functions Toolwire hands in, each an `async def` the program awaits. Calls
start when the program waits (like tasks: `asyncio.gather` runs several at once), and a call
made but never waited for before the program ends never runs. Every limit ends the run with
a clear error: wall time (tool time included), interpreter time, memory, tool calls, printed
bytes. A function that raises `Suspend` waits for an outside answer: once nothing else in the
program can go on, the run pauses (`Outcome.paused`) and `Sandbox.resume` goes on with it,
here or in another process.

The sandbox's workers are separate processes (pydantic-monty runs programs nowhere else: a
worker that dies of a crash is replaced and this process is unharmed). Each run is driven
from a thread of the sandbox's own (Monty's synchronous client answers a suspension in about
20-40 us, its asyncio client in 100-200); the functions still run on the event loop, handed
over once per batch of awaited calls. An awaited call costs two suspensions (the call, then
its future) unless the program awaits each call of it at once at its top level: then it is
called directly and answered with its value (`direct`), one suspension.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pydantic_monty as monty

from .direct import direct
from .paused import Answer, Paused, Suspend, storable

Function = Callable[[tuple[Any, ...], dict[str, Any]], Awaitable[Any]]
"""A function handed to programs: (positional, keyword arguments) → its value. Raising
`ToolFailed` raises a `RuntimeError` in the program, which may catch it; any other exception
is a bug of the function and fails `Sandbox.run`."""

_OVERHEAD_SUSPENSIONS = 16


class ToolFailed(Exception):
    """A function's failure as the program sees it."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one run may use."""

    wall_s: float = 30.0
    """From start to end, tool calls included."""
    cpu_s: float = 5.0
    """Interpreter time: an endless loop stops here."""
    memory_mb: int = 64
    tool_calls: int = 50
    output_bytes: int = 65536
    """What the program prints; past it the output is cut and the run stopped."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a run ended."""

    output: str
    """What it printed (its last expression's value when it printed nothing)."""
    error: str | None = None
    """`Type: message` of what stopped it; None when it ran to its end."""
    calls: int = 0
    """Function calls it awaited."""
    unawaited: tuple[str, ...] = ()
    """Functions it called without awaiting: they did not run."""
    paused: Paused | None = None
    """Set when the run waits for outside answers (`Sandbox.resume` goes on)."""


class Sandbox:
    """A pool of sandbox workers; `async with` starts and stops it."""

    def __init__(self, *, workers: int = 2) -> None:
        self._pool = monty.Monty(min_processes=1, max_processes=workers)
        self._threads = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="toolwire-sandbox"
        )
        self._open = False

    async def __aenter__(self) -> Sandbox:
        await asyncio.get_running_loop().run_in_executor(self._threads, self._pool.__enter__)
        self._open = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        if not self._open:
            return
        self._open = False
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._threads, self._pool.__exit__, None, None, None)
        self._threads.shutdown(wait=False, cancel_futures=True)

    async def run(self, code: str, functions: Mapping[str, Function], limits: Limits) -> Outcome:
        """Run `code` to its end, its first limit, or a pause (a function raised `Suspend`
        and nothing else in the program can go on)."""
        program = direct(code, list(functions))
        run = _Run(functions, limits, asyncio.get_running_loop(), direct=program.names)
        return await self._drive(run, lambda session: session.feed_start(program.code, **run.hooks))

    async def resume(
        self,
        paused: Paused,
        answers: Mapping[str, Answer],
        functions: Mapping[str, Function],
        limits: Limits,
    ) -> Outcome:
        """Go on with a paused run, its waiting calls answered (by token); a waiting call
        left unanswered fails in the program."""
        run = _Run(functions, limits, asyncio.get_running_loop(), paused)
        settled = {
            call_id: _settled(answers.get(token, Answer(failure=f"{token} was not answered")))
            for call_id, token in paused.waiting.items()
        }

        def start(session: Any) -> Any:
            snapshot = session.load_snapshot(paused.state, **run.hooks)
            if isinstance(snapshot, monty.FunctionSnapshot):  # paused on a direct call
                answer: Any = settled[snapshot.call_id]
                return snapshot.resume(answer)
            return snapshot.resume(settled)

        return await self._drive(run, start)

    async def _drive(self, run: _Run, start: Callable[[Any], Any]) -> Outcome:
        loop = asyncio.get_running_loop()
        done = loop.run_in_executor(self._threads, run.drive, self._pool, start)
        try:
            async with asyncio.timeout(run.limits.wall_s):
                return await asyncio.shield(done)
        except TimeoutError:
            return run.outcome(f"TimeoutError: the program ran past its {run.limits.wall_s:g} s")
        finally:
            await run.stop()


class _Stopped(Exception):
    """The run was stopped from outside (its wall time, a cancelled turn)."""


class _Pause(Exception):
    """Every call the program awaits waits for an outside answer."""


class _Run:
    """One program's run, driven from a sandbox thread."""

    def __init__(
        self,
        functions: Mapping[str, Function],
        limits: Limits,
        loop: asyncio.AbstractEventLoop,
        paused: Paused | None = None,
        *,
        direct: frozenset[str] = frozenset(),
    ) -> None:
        self._functions = functions
        self._direct = direct if paused is None else frozenset(paused.direct)
        """Functions the program calls without `await`: answered with their values."""
        self._limits = self.limits = limits
        self._loop = loop
        self._context = contextvars.copy_context()
        """The context of the request that runs the program (made on the event loop)."""
        self._printed: list[str] = []
        self._size = 0
        self._calls: dict[int, tuple[str, tuple[Any, ...], dict[str, Any]]] = {}
        """Calls made and not awaited yet, by the sandbox's call id."""
        self._running: dict[int, asyncio.Future[Any]] = {}
        self._made = 0
        self._awaited = 0
        self._stopped = threading.Event()
        self._batch: asyncio.Task[Any] | None = None
        """The event loop's side of the suspension being answered."""
        self._outside: dict[int, str] = {}
        """Awaited calls waiting for an outside answer: sandbox call id → token."""
        self.hooks = {"print_callback": self._print}
        if paused is not None:
            self._printed = [paused.printed] if paused.printed else []
            self._size = len(paused.printed.encode())
            self._calls = {k: (n, tuple(a), kw) for k, (n, a, kw) in paused.calls.items()}
            self._made, self._awaited = paused.made, paused.awaited

    # The sandbox thread's side.

    def drive(self, pool: Any, start: Callable[[Any], Any]) -> Outcome:
        try:
            with pool.checkout(limits=_resource_limits(self._limits)) as session:
                snapshot = start(session)
                while not isinstance(snapshot, monty.MontyComplete):
                    if self._size > self._limits.output_bytes:
                        return self.outcome(self._output_error())
                    try:
                        snapshot = self._answer(snapshot)
                    except _Pause:
                        return self._paused(snapshot)
        except _Stopped:
            return self.outcome("Stopped: the run was stopped")
        except monty.MontySyntaxError as exc:
            return self.outcome(exc.display(format="type-msg"))
        except monty.MontyRuntimeError as exc:
            return self.outcome(_runtime_error(exc, self._limits))
        except monty.MontyCrashedError as exc:
            return self.outcome(f"SandboxCrashed: {exc}")
        except monty.MontyError as exc:
            return self.outcome(f"{type(exc).__name__}: {exc}")
        if self._size > self._limits.output_bytes:
            return self.outcome(self._output_error())
        outcome = self.outcome(None)
        value = snapshot.output
        if not outcome.output and value is not None:
            return Outcome(repr(value), None, outcome.calls, outcome.unawaited)
        return outcome

    def _print(self, _stream: str, text: str) -> None:
        # Raising here would reach the program as its own error: past the limit the text is
        # dropped, and the run stops at its next call or its end.
        if self._size > self._limits.output_bytes:
            return
        data = text.encode()
        room = self._limits.output_bytes - self._size
        self._printed.append(text if len(data) <= room else data[:room].decode(errors="ignore"))
        self._size += len(data)

    def _answer(self, snapshot: Any) -> Any:
        if self._stopped.is_set():
            raise _Stopped
        if isinstance(snapshot, monty.FunctionSnapshot):
            if snapshot.is_os_function:
                return snapshot.resume_not_handled()  # refused: PermissionError
            return self._call(snapshot)
        if isinstance(snapshot, monty.FutureSnapshot):
            return snapshot.resume(self._settle(list(snapshot.pending_call_ids)))
        if isinstance(snapshot, monty.NameLookupSnapshot):
            return snapshot.resume()  # undefined: NameError
        raise monty.MontyError(f"unexpected sandbox state {type(snapshot).__name__}")

    def _call(self, snapshot: Any) -> Any:
        name = str(snapshot.function_name)
        if name not in self._functions:
            message = f"name '{name}' is not defined"
            return snapshot.resume({"exc_type": "NameError", "message": message})
        if self._made >= self._limits.tool_calls:
            message = f"the program's limit of {self._limits.tool_calls} tool calls is reached"
            return snapshot.resume({"exc_type": "RuntimeError", "message": message})
        self._made += 1
        self._calls[snapshot.call_id] = (name, tuple(snapshot.args), dict(snapshot.kwargs))
        if name in self._direct:  # awaited at once: its value, in one round trip
            return snapshot.resume(self._settle([snapshot.call_id])[snapshot.call_id])
        return snapshot.resume({"future": ...})

    def _settle(self, pending: list[int]) -> dict[int, Any]:  # raises _Pause
        """Run the awaited calls on the event loop, in the context of the request that runs
        the program (its stats, its trace); their results as soon as one settles."""
        batch: concurrent.futures.Future[dict[int, Any] | None] = concurrent.futures.Future()

        def start() -> None:
            task = self._loop.create_task(self._batched(pending), context=self._context.copy())
            task.add_done_callback(lambda done: _copy_outcome(done, batch))

        self._loop.call_soon_threadsafe(start)
        try:
            settled = batch.result()
        except concurrent.futures.CancelledError:
            raise _Stopped from None
        if settled is None:
            raise _Pause
        return settled

    def _paused(self, snapshot: Any) -> Outcome:
        calls = {k: (n, list(a), kw) for k, (n, a, kw) in self._calls.items()}
        if not storable(calls):
            return self.outcome("RuntimeError: the program paused holding calls it cannot keep")
        paused = Paused(
            snapshot.dump(),
            dict(self._outside),
            calls,
            "".join(self._printed),
            self._made,
            self._awaited,
            tuple(sorted(self._direct)),
        )
        return Outcome(paused.printed, None, self._awaited, paused=paused)

    def _output_error(self) -> str:
        return f"OutputLimit: the program printed more than {self._limits.output_bytes} bytes"

    def outcome(self, error: str | None) -> Outcome:
        unawaited = tuple(name for name, _, _ in self._calls.values())
        return Outcome("".join(self._printed), error, self._awaited, unawaited)

    # The event loop's side.

    async def _batched(self, pending: list[int]) -> dict[int, Any] | None:
        if self._stopped.is_set():
            raise asyncio.CancelledError
        self._batch = asyncio.current_task()
        try:
            return await self._run_calls(pending)
        finally:
            self._batch = None

    async def _run_calls(self, pending: list[int]) -> dict[int, Any] | None:
        """Start the awaited calls not started yet; the results of those that settle first.
        None: every awaited call waits for an outside answer (the run pauses)."""
        if len(pending) == 1 and pending[0] in self._calls:
            return await self._run_one(pending[0])
        for call_id in pending:
            if call_id in self._calls and call_id not in self._running:
                name, args, kwargs = self._calls.pop(call_id)
                self._running[call_id] = asyncio.ensure_future(self._functions[name](args, kwargs))
                self._awaited += 1
        while True:
            settled = self._collect(pending)
            if settled:
                return settled
            waiting = [self._running[i] for i in pending if i in self._running]
            if not waiting:
                return None
            try:
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                self._cancel_running()
                raise

    def _collect(self, pending: list[int]) -> dict[int, Any]:
        """The results of the pending calls that are done; those waiting for an outside
        answer set aside."""
        settled: dict[int, Any] = {}
        for call_id in pending:
            task = self._running.get(call_id)
            if task is None or not task.done():
                continue
            del self._running[call_id]
            error = task.exception()
            if isinstance(error, Suspend):
                self._outside[call_id] = error.token
            elif error is None:
                settled[call_id] = {"return_value": task.result()}
            elif isinstance(error, ToolFailed):
                settled[call_id] = {"exc_type": "RuntimeError", "message": str(error)}
            else:
                raise error  # a function's bug: the run fails, as the caller's code would
        return settled

    async def _run_one(self, call_id: int) -> dict[int, Any] | None:
        """A call awaited alone (a plain `await f()`): run here, no task to make and wait on."""
        name, args, kwargs = self._calls.pop(call_id)
        self._awaited += 1
        try:
            value = await self._functions[name](args, kwargs)
        except Suspend as waiting:
            self._outside[call_id] = waiting.token
            return None
        except ToolFailed as exc:
            return {call_id: {"exc_type": "RuntimeError", "message": str(exc)}}
        return {call_id: {"return_value": value}}

    def _cancel_running(self) -> None:
        for task in self._running.values():
            task.cancel()
        self._running.clear()

    async def stop(self) -> None:
        """Stop the run at its next suspension; cancel its running calls and wait for them."""
        self._stopped.set()
        tasks = [*self._running.values(), *([self._batch] if self._batch is not None else [])]
        self._running.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task


def _settled(answer: Answer) -> dict[str, Any]:
    if answer.failure is not None:
        return {"exc_type": "RuntimeError", "message": answer.failure}
    return {"return_value": answer.value}


def _copy_outcome(task: asyncio.Task[Any], future: concurrent.futures.Future[Any]) -> None:
    if task.cancelled():
        future.cancel()
    elif (error := task.exception()) is not None:
        future.set_exception(error)
    else:
        future.set_result(task.result())


def _resource_limits(limits: Limits) -> monty.ResourceLimits:
    return {
        "max_feed_duration_secs": limits.cpu_s,
        "max_memory": limits.memory_mb * 1024 * 1024,
        # Each awaited call suspends twice (the call, then its future).
        "max_suspensions": 2 * limits.tool_calls + _OVERHEAD_SUSPENSIONS,
    }


def _runtime_error(exc: monty.MontyRuntimeError, limits: Limits) -> str:
    text = exc.display(format="type-msg")
    if text.startswith("TimeoutError"):
        return f"TimeoutError: the program computed for more than {limits.cpu_s:g} s"
    if text.startswith("MemoryError"):
        return f"MemoryError: the program used more than {limits.memory_mb} MB"
    return text


__all__ = ["Function", "Limits", "Outcome", "Sandbox", "ToolFailed"]
