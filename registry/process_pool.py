"""The process backend: tools run in worker processes, their functions sent with cloudpickle.

Not `concurrent.futures.ProcessPoolExecutor`: that pool cannot kill one worker, and a
worker that dies breaks the whole pool (every call in flight fails with BrokenProcessPool).
Here each worker is a subprocess that runs one call at a time, so a call that times out or
is cancelled has exactly its own worker killed, and a worker that crashes fails exactly
its own call; the pool replaces either on the next call.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import cloudpickle

from registry.backends import ExecutionBackend, OnStart, exit_error
from registry.errors import RegistryError
from registry.tool import Tool

__all__ = ["ProcessBackend", "WorkerCrashedError"]

log = logging.getLogger("toolwire.execution")

_HEADER = struct.Struct(">Q")
_WORKER_SCRIPT = str(Path(__file__).with_name("process_worker.py"))
_PICKLE_CACHE = 256
_MISSING = b""
"""The worker's reply when it no longer has the function a request names only by digest."""


class WorkerCrashedError(RegistryError):
    """The worker process running a call died before it answered."""


class _Unpicklable(Exception):
    """The call's arguments cannot be pickled: it runs on the fallback backend instead."""


class _Worker:
    """One worker subprocess and its pipes; used by one call at a time.

    Everything that blocks (spawning, pickling, the pipes, reaping) runs in a reader
    thread; the event loop only creates the object, checks `alive` and calls `kill`.
    """

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.known: set[bytes] = set()
        self._lock = threading.Lock()
        self._killed = False
        self._discarded = False

    def alive(self) -> bool:
        """Whether the worker can take a call (not started yet counts; never blocks)."""
        return not self._killed and (self.process is None or self.process.poll() is None)

    def call(self, digest: bytes, function: bytes, arguments: dict[str, Any]) -> tuple[str, Any]:
        """Send one call and wait for its unpickled reply (runs in a reader thread).

        Raises:
            _Unpicklable: the arguments cannot be pickled (nothing was sent).
            WorkerCrashedError: the worker died or closed its pipe.
        """
        try:
            argument_bytes = cloudpickle.dumps(arguments)
        except Exception as exc:
            raise _Unpicklable(exc) from exc
        self._start()
        function_or_none = None if digest in self.known else function
        reply = self._exchange(digest, function_or_none, argument_bytes)
        if reply == _MISSING:
            # The worker evicted the function from its bounded cache: send it along again.
            reply = self._exchange(digest, function, argument_bytes)
        self.known.add(digest)
        try:
            kind, value = cloudpickle.loads(reply)
        except Exception as exc:
            # The worker is fine: a result this process cannot unpickle fails the call only.
            return "error", exc
        return kind, value

    def _start(self) -> None:
        if self.process is not None:
            return
        env = dict(os.environ)
        # The worker must import what the parent can (tool modules, this package).
        env["PYTHONPATH"] = os.pathsep.join(p or os.getcwd() for p in sys.path)
        env["TOOLWIRE_PARENT_PID"] = str(os.getpid())
        # Spawned from a reader thread: such threads live as long as the pool, which
        # matters because PR_SET_PDEATHSIG fires when the spawning *thread* exits.
        process = subprocess.Popen(
            [sys.executable, "-P", _WORKER_SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            close_fds=True,
        )
        with self._lock:
            self.process = process
            killed = self._killed
        if killed:
            # Killed while it was being spawned: the exchange then fails at once.
            process.kill()

    def _exchange(self, digest: bytes, function: bytes | None, arguments: bytes) -> bytes:
        process = self.process
        assert process is not None and process.stdin is not None and process.stdout is not None
        payload = cloudpickle.dumps((digest, function, arguments))
        try:
            process.stdin.write(_HEADER.pack(len(payload)) + payload)
            process.stdin.flush()
            reply = _read_frame(process.stdout)
        except (OSError, ValueError) as exc:
            reply = None
            log.debug("worker %s pipe failed: %s", process.pid, exc)
        if reply is None:
            self.discard()
            raise WorkerCrashedError(_death_notice(process))
        return reply

    def kill(self) -> None:
        """Kill the process (or stop it from starting); a reader thread blocked on it then
        sees end of file. Never blocks."""
        with self._lock:
            self._killed = True
            process = self.process
        if process is not None and process.poll() is None:
            process.kill()

    def discard(self) -> None:
        """Kill, reap and close the pipes (idempotent; blocks until the process is gone)."""
        with self._lock:
            if self._discarded:
                return
            self._discarded = True
        self.kill()
        process = self.process
        if process is None:
            return
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                # A pipe whose reader died cannot flush; it is closed all the same.
                with contextlib.suppress(OSError):
                    stream.close()


class ProcessBackend:
    """Runs tools in worker processes; tools that cannot be pickled run on `fallback`.

    Workers start on demand (at most `workers` at once) and are killed by `close`; on Linux
    they also die with the parent (PR_SET_PDEATHSIG), and idle ones exit on end of file.
    Spawning, pickling and reaping happen in threads, never on the event loop.

    Raises:
        RegistryError: `workers` is not positive.
    """

    def __init__(self, *, workers: int, fallback: ExecutionBackend) -> None:
        if workers <= 0:
            raise RegistryError("process workers must be positive")
        self._fallback = fallback
        self._slots = asyncio.Semaphore(workers)
        self._idle: list[_Worker] = []
        self._live: set[_Worker] = set()
        # One blocked reader thread per busy worker (a killed worker ends its read with
        # EOF), and one more so reaping killed workers never queues behind the calls.
        self._readers = ThreadPoolExecutor(
            max_workers=workers + 1, thread_name_prefix="toolwire-ipc"
        )
        self._pickled: dict[int, tuple[Callable[..., Any], bytes, bytes]] = {}
        self._fell_back: set[str] = set()
        self._closed = False

    async def run(
        self, tool: Tool, arguments: dict[str, Any], *, on_start: OnStart | None = None
    ) -> Any:
        """Run `tool.fn(**arguments)` in a worker process and return its result.

        Waits for a free worker first; `on_start` is called once the call has one.

        Raises:
            WorkerCrashedError: the worker died mid-call (it is replaced).
            RegistryError: the pool is closed, or the result cannot be pickled.
        """
        try:
            digest, function = await self._pickle_function(tool)
        except Exception as exc:
            self._note_fallback(tool, exc)
            return await self._fallback.run(tool, arguments, on_start=on_start)
        async with self._slots:
            if on_start is not None:
                on_start()
            try:
                # Pickled once the call has started: a ToolContext carries its deadline.
                kind, value = await self._call(digest, function, arguments)
            except _Unpicklable as exc:
                unpicklable = exc.__cause__ or exc
            else:
                return _unpack(kind, value)
        self._note_fallback(tool, unpicklable)
        return await self._fallback.run(tool, arguments, on_start=on_start)

    def close(self) -> None:
        """Kill every worker and stop the reader threads (they reap the workers)."""
        self._closed = True
        for worker in list(self._live):
            worker.kill()
        for worker in self._idle:
            self._discard_later(worker)
        self._idle.clear()
        self._live.clear()
        # Not cancel_futures: what is queued only reaps workers that were just killed.
        self._readers.shutdown(wait=False)

    async def _call(
        self, digest: bytes, function: bytes, arguments: dict[str, Any]
    ) -> tuple[str, Any]:
        """One call on an idle or new worker; the caller holds a slot."""
        worker = self._take()
        job = self._readers.submit(worker.call, digest, function, arguments)
        try:
            reply = await asyncio.wrap_future(job)
        except _Unpicklable:
            self._idle.append(worker)  # never used: nothing was sent
            raise
        except BaseException:
            # Timed out, cancelled or crashed: the worker may still be running the call,
            # so it is killed, never reused; once the reader thread sees EOF it is reaped.
            self._live.discard(worker)
            worker.kill()
            job.add_done_callback(lambda _: self._discard_later(worker))
            raise
        if self._closed:
            self._discard_later(worker)
        else:
            self._idle.append(worker)
        return reply

    def _take(self) -> _Worker:
        if self._closed:
            raise RegistryError("the executor is closed")
        while self._idle:
            worker = self._idle.pop()
            if worker.alive():
                return worker
            self._live.discard(worker)
            self._discard_later(worker)
        worker = _Worker()
        self._live.add(worker)
        return worker

    def _discard_later(self, worker: _Worker) -> None:
        """Kill now and reap in a reader thread: waiting for a process never blocks the loop."""
        worker.kill()
        # Once the readers are shut down, the killed process is left to the subprocess
        # module, which reaps it later.
        with contextlib.suppress(RuntimeError):
            self._readers.submit(worker.discard)

    async def _pickle_function(self, tool: Tool) -> tuple[bytes, bytes]:
        fn = tool.fn
        if fn is None:
            raise RegistryError(f"tool {tool.qualified_name!r} has no local function to run")
        cached = self._pickled.get(id(fn))
        if cached is not None and cached[0] is fn:
            return cached[1], cached[2]
        data = await asyncio.to_thread(cloudpickle.dumps, fn)
        digest = hashlib.blake2b(data, digest_size=16).digest()
        if len(self._pickled) >= _PICKLE_CACHE:
            self._pickled.clear()
        # The function is kept with its id so a recycled id can never match another function.
        self._pickled[id(fn)] = (fn, digest, data)
        return digest, data

    def _note_fallback(self, tool: Tool, exc: BaseException) -> None:
        if tool.qualified_name not in self._fell_back:
            self._fell_back.add(tool.qualified_name)
            log.warning(
                "tool %s cannot be pickled for a worker process (%s: %s); it runs in threads",
                tool.qualified_name,
                type(exc).__name__,
                exc,
            )


def _read_frame(stream: IO[bytes]) -> bytes | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    payload = stream.read(size)
    return payload if len(payload) == size else None


def _death_notice(process: subprocess.Popen[bytes]) -> str:
    code = process.wait()
    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    return f"the worker process running the call {how}; a new worker takes the next call"


def _unpack(kind: str, value: Any) -> Any:
    if kind == "ok":
        return value
    if kind == "error":
        if not isinstance(value, Exception):
            # The worker maps a tool's exits; whatever else is not an Exception (a tool's own
            # CancelledError) must not pass for the caller's own cancellation or exit here.
            raise exit_error(value) from value
        raise value
    raise RegistryError(str(value))
