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


class _Worker:
    """One worker subprocess and its pipes; used by one call at a time."""

    def __init__(self) -> None:
        env = dict(os.environ)
        # The worker must import what the parent can (tool modules, this package).
        env["PYTHONPATH"] = os.pathsep.join(p or os.getcwd() for p in sys.path)
        env["TOOLWIRE_PARENT_PID"] = str(os.getpid())
        self.process = subprocess.Popen(
            [sys.executable, "-P", _WORKER_SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            close_fds=True,
        )
        self.known: set[bytes] = set()
        self._lock = threading.Lock()
        self._discarded = False

    def roundtrip(self, digest: bytes, function: bytes, arguments: bytes) -> bytes:
        """Send one call and wait for its reply (runs in a reader thread).

        Raises:
            WorkerCrashedError: the worker died or closed its pipe.
        """
        reply = self._exchange(digest, None if digest in self.known else function, arguments)
        if reply == _MISSING:
            # The worker evicted the function from its bounded cache: send it along again.
            reply = self._exchange(digest, function, arguments)
        self.known.add(digest)
        return reply

    def _exchange(self, digest: bytes, function: bytes | None, arguments: bytes) -> bytes:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        payload = cloudpickle.dumps((digest, function, arguments))
        try:
            stdin.write(_HEADER.pack(len(payload)) + payload)
            stdin.flush()
            reply = _read_frame(stdout)
        except (OSError, ValueError) as exc:
            reply = None
            log.debug("worker %s pipe failed: %s", self.process.pid, exc)
        if reply is None:
            self.discard()
            raise WorkerCrashedError(_death_notice(self.process))
        return reply

    def kill(self) -> None:
        """Kill the process; a reader thread blocked on it then sees end of file."""
        if self.process.poll() is None:
            self.process.kill()

    def discard(self) -> None:
        """Kill, reap and close the pipes (idempotent)."""
        with self._lock:
            if self._discarded:
                return
            self._discarded = True
        self.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                # A pipe whose reader died cannot flush; it is closed all the same.
                with contextlib.suppress(OSError):
                    stream.close()


class ProcessBackend:
    """Runs tools in worker processes; tools that cannot be pickled run on `fallback`.

    Workers start on demand (at most `workers` at once) and are killed by `close`; on Linux
    they also die with the parent (PR_SET_PDEATHSIG), and idle ones exit on end of file.

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
        # One blocked reader thread per busy worker: a killed worker ends its read with EOF.
        self._readers = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="toolwire-ipc")
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
            digest, function = self._pickle_function(tool)
        except Exception as exc:
            self._note_fallback(tool, exc)
            return await self._fallback.run(tool, arguments, on_start=on_start)
        async with self._slots:
            if on_start is not None:
                on_start()
            try:
                # Pickled once the call has started: a ToolContext carries its deadline.
                argument_bytes = cloudpickle.dumps(arguments)
            except Exception as exc:
                unpicklable: Exception = exc
            else:
                return await self._run_in_worker(digest, function, argument_bytes)
        self._note_fallback(tool, unpicklable)
        return await self._fallback.run(tool, arguments, on_start=on_start)

    async def _run_in_worker(self, digest: bytes, function: bytes, argument_bytes: bytes) -> Any:
        """Send one call to an idle or new worker; the caller holds a slot."""
        worker = self._take()
        job = self._readers.submit(worker.roundtrip, digest, function, argument_bytes)
        try:
            reply = await asyncio.wrap_future(job)
        except BaseException:
            # Timed out, cancelled or crashed: the worker may still be running the call,
            # so it is killed, never reused; once the reader thread sees EOF it is reaped.
            self._live.discard(worker)
            worker.kill()
            job.add_done_callback(lambda _: worker.discard())
            raise
        if self._closed:
            worker.discard()
        else:
            self._idle.append(worker)
        return _unpack(reply)

    def close(self) -> None:
        """Kill every worker and stop the reader threads."""
        self._closed = True
        for worker in list(self._live):
            worker.kill()
        for worker in self._idle:
            worker.discard()
        self._idle.clear()
        self._live.clear()
        self._readers.shutdown(wait=False, cancel_futures=True)

    def _take(self) -> _Worker:
        if self._closed:
            raise RegistryError("the executor is closed")
        while self._idle:
            worker = self._idle.pop()
            if worker.process.poll() is None:
                return worker
            self._live.discard(worker)
            worker.discard()
        worker = _Worker()
        self._live.add(worker)
        return worker

    def _pickle_function(self, tool: Tool) -> tuple[bytes, bytes]:
        fn = tool.fn
        if fn is None:
            raise RegistryError(f"tool {tool.qualified_name!r} has no local function to run")
        cached = self._pickled.get(id(fn))
        if cached is not None and cached[0] is fn:
            return cached[1], cached[2]
        data = cloudpickle.dumps(fn)
        digest = hashlib.blake2b(data, digest_size=16).digest()
        if len(self._pickled) >= _PICKLE_CACHE:
            self._pickled.clear()
        # The function is kept with its id so a recycled id can never match another function.
        self._pickled[id(fn)] = (fn, digest, data)
        return digest, data

    def _note_fallback(self, tool: Tool, exc: Exception) -> None:
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


def _unpack(reply: bytes) -> Any:
    kind, value = cloudpickle.loads(reply)
    if kind == "ok":
        return value
    if kind == "error":
        if not isinstance(value, Exception):
            # The worker maps a tool's exits; whatever else is not an Exception (a tool's own
            # CancelledError) must not pass for the caller's own cancellation or exit here.
            raise exit_error(value) from value
        raise value
    raise RegistryError(str(value))
