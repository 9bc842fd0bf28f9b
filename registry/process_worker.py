"""The worker process of the process backend, run as a script: one call at a time.

It imports only the standard library and cloudpickle, so a worker starts in tens of
milliseconds; a tool's own module is imported when its function is first unpickled.

Protocol, over the inherited stdin/stdout pipes: each frame is an 8-byte big-endian length
and a cloudpickle payload. A request is `(digest, function_bytes_or_None, arguments_bytes)`;
the function is sent once per worker and cached by digest. A reply is `("ok", value)`,
`("error", exception)` or `("unpicklable", text)`; an empty frame means the function named
only by its digest has left the cache, and the parent sends the request again with it.
"""

from __future__ import annotations

import ctypes
import inspect
import os
import signal
import struct
import sys
from collections import OrderedDict
from typing import IO, Any

import cloudpickle

_HEADER = struct.Struct(">Q")
_PR_SET_PDEATHSIG = 1
_CACHED_FUNCTIONS = 128


def main() -> None:
    """Serve calls until the parent closes the pipe (or dies)."""
    _die_with_parent()
    # Ctrl-C in a terminal reaches the whole process group; the parent decides shutdown.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests, replies = _claim_pipes()
    functions: OrderedDict[bytes, Any] = OrderedDict()
    while True:
        frame = _read_frame(requests)
        if frame is None:
            return
        replies.write(_serve(frame, functions))
        replies.flush()


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # The parent may have died before prctl took effect; then we are already orphaned.
    if str(os.getppid()) != os.environ.get("TOOLWIRE_PARENT_PID"):
        os._exit(0)


def _claim_pipes() -> tuple[IO[bytes], IO[bytes]]:
    # The protocol keeps private copies of the pipes; a tool that prints writes to stderr
    # and a tool that reads stdin reads nothing, so neither can corrupt the frames.
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return requests, replies


def _read_frame(stream: IO[bytes]) -> bytes | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    payload = stream.read(size)
    return payload if len(payload) == size else None


def _serve(frame: bytes, functions: OrderedDict[bytes, Any]) -> bytes:
    try:
        digest, function_bytes, argument_bytes = cloudpickle.loads(frame)
        fn = functions.get(digest)
        if fn is not None:
            functions.move_to_end(digest)
        else:
            if function_bytes is None:
                return _HEADER.pack(0)
            fn = cloudpickle.loads(function_bytes)
            functions[digest] = fn
            if len(functions) > _CACHED_FUNCTIONS:
                functions.popitem(last=False)
        value = _call(fn, cloudpickle.loads(argument_bytes))
        reply: tuple[str, Any] = ("ok", value)
    except (SystemExit, KeyboardInterrupt) as exc:
        # A tool's exit fails its call, never the worker (the parent's exit_error, inlined:
        # the worker imports nothing of the registry).
        reply = ("error", RuntimeError(f"the tool exited: {exc!r}"))
    except BaseException as exc:
        reply = ("error", exc)
    return _frame(reply)


def _call(fn: Any, arguments: dict[str, Any]) -> Any:
    value = fn(**arguments)
    if inspect.isawaitable(value):
        import asyncio

        async def wait() -> Any:
            return await value

        value = asyncio.run(wait())
    return value


def _frame(reply: tuple[str, Any]) -> bytes:
    try:
        payload = cloudpickle.dumps(reply)
    except Exception as exc:
        kind, value = reply
        what = "result" if kind == "ok" else f"exception {type(value).__name__}: {value}"
        payload = cloudpickle.dumps(("unpicklable", f"the tool's {what} cannot be pickled: {exc}"))
    return _HEADER.pack(len(payload)) + payload


if __name__ == "__main__":
    main()
