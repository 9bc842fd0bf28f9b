"""The stdio transport of an MCP session: the server's pipes read and written by the session's
own tasks (a wrapped library cost).

The mcp SDK's `stdio_client` bridges a server's pipes to the session through two relay tasks
and two unbuffered memory streams: each message sent is handed to a writer task, and each
line read is parsed by a reader task and handed on to the session's receive loop, so every
`tools/call` costs four task switches and anyio's stream bookkeeping on top of the pipe
I/O, and each answer is validated as a JSON-RPC message before the session validates its
result again. Here `send` writes to the server's stdin in the sending task, and the lines of
its stdout are parsed as the pipe delivers them (the subprocess protocol feeds them to
`_Lines` in place of its stream reader) and queued for the session's receive loop; an answer
to a request (`{"jsonrpc": "2.0", "id": ..., "result": {...}}`, what nearly every line is) is
taken as it is, its result left to the session (or the lean call, `lean_calls.py`, which
takes it at once when nothing is queued before it), which validates it against the method's
result type; any other line is validated as the SDK validates it. The wire format is the
SDK's (one JSON message per line, its serialisation), and so is the life cycle: the server
runs in a session of its own, and on exit its stdin is closed, it gets `PROCESS_EXIT_S` to
end, then its whole process group is terminated (SIGTERM, SIGKILL after `KILL_AFTER_S`),
shielded from cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, TextIO, cast

import anyio
import mcp_types as types
import orjson
from anyio.abc import Process
from mcp.client._transport import TransportStreams
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from registry.mcp.inbox import Inbox
from registry.mcp.transport_streams import Item, TransportWriter

__all__ = ["MAX_LINE_BYTES", "stdio_transport"]

log = logging.getLogger("toolwire.mcp")

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest message a stdio server may send (a longer one ends the connection)."""
PROCESS_EXIT_S = 2.0
"""How long a server has to exit on its own once its stdin is closed."""
KILL_AFTER_S = 2.0
"""SIGTERM to SIGKILL, for a server (process group) that did not exit."""
_READ_SIZE = 65536
_QUEUED = 256
"""Messages read and not yet taken by the session past which the server's stdout is not read
(until half of them are taken)."""


@contextlib.asynccontextmanager
async def stdio_transport(
    server: StdioServerParameters, errlog: TextIO
) -> AsyncIterator[TransportStreams]:
    """Start `server` (its stderr to `errlog`) and yield the session's read and write streams.

    Raises:
        OSError: the server could not be started (as the SDK's `stdio_client` raises).
    """
    process = await anyio.open_process(
        [server.command, *server.args],
        env=get_default_environment() | (server.env or {}),
        stderr=errlog,
        cwd=server.cwd,
        start_new_session=True,
    )
    reader = _Lines(server.encoding, server.encoding_error_handler)
    reader.hook(process)
    writer = _Writer(process, server.encoding, server.encoding_error_handler)
    try:
        yield reader, writer
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process)


class _Lines(Inbox):
    """The server's stdout as the session reads it: one message per line, parsed as the pipe
    delivers it (`feed_data`: the subprocess protocol feeds this in place of its stream
    reader, `hook`), so that a plain answer goes straight to the lean call waiting for it
    (`Inbox.claimed`) in the loop turn its bytes arrive in, not in a turn of the session's
    receive loop first, then one of the call. Everything else is queued for the session, in
    order (an answer behind a queued message is queued too). When the protocol cannot be
    reached, `receive` reads the pipe itself (`pull`)."""

    def __init__(self, encoding: str, errors: str) -> None:
        super().__init__()
        self._utf8 = encoding.lower().replace("-", "") == "utf8" and errors == "strict"
        self._encoding = encoding
        self._errors = errors
        self._buffer = b""
        self._pipe: asyncio.ReadTransport | None = None
        self._paused = False
        self._pull: Any = None
        """The process's stdout stream, read by `receive` when nothing feeds this."""

    def hook(self, process: Process) -> None:
        """Be fed by `process`'s subprocess protocol instead of its stdout stream reader (or
        read that stream, `pull`, if the protocol is not the asyncio one)."""
        protocol = getattr(getattr(process, "_process", None), "_protocol", None)
        reader = getattr(protocol, "stdout", None)
        if not isinstance(reader, asyncio.StreamReader):
            self._pull = process.stdout
            return
        protocol.stdout = self  # type: ignore[union-attr]
        self._pipe = getattr(reader, "_transport", None)
        # What the reader got before this took its place (a server that wrote, or ended, at
        # once) is taken over.
        early = bytes(getattr(reader, "_buffer", b""))
        if early:
            self.feed_data(early)
        if reader.exception() is not None:
            self.end()
        elif getattr(reader, "_eof", False):
            self.feed_eof()

    # What the subprocess protocol calls on its stdout reader.
    def set_transport(self, transport: asyncio.ReadTransport) -> None:
        self._pipe = transport

    def feed_data(self, data: bytes) -> None:
        if self._closed or self._end is not None:
            return
        buffer = self._buffer + data if self._buffer else data
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            line = buffer[start:end]
            start = end + 1
            if line.strip():
                self._take(line)
        self._buffer = buffer[start:] if start else buffer
        if len(self._buffer) > MAX_LINE_BYTES:
            log.warning("MCP stdio server sent a line longer than %d bytes", MAX_LINE_BYTES)
            self._buffer = b""
            self.end()
        elif len(self._items) > _QUEUED and not self._paused and self._pipe is not None:
            self._paused = True  # the session reads slower than the server writes
            self._pipe.pause_reading()

    def feed_eof(self) -> None:
        # An unfinished last line (no newline before the end) is dropped, as the SDK does.
        self.end(anyio.EndOfStream)

    def set_exception(self, exc: BaseException) -> None:
        self.end()

    async def receive(self) -> Item:
        pull = self._pull
        while pull is not None and not self._items and self._end is None and not self._closed:
            try:
                chunk = await pull.receive(_READ_SIZE)
            except anyio.EndOfStream:
                self.feed_eof()
            except (anyio.ClosedResourceError, ConnectionError, OSError):
                self.end()
            else:
                self.feed_data(chunk)
        item = await super().receive()
        if self._paused and len(self._items) <= _QUEUED // 2:
            self._resume()
        return item

    async def aclose(self) -> None:
        await super().aclose()
        self._items.clear()
        self._resume()  # the server may write as it ends: its pipe is read (and dropped)

    def _resume(self) -> None:
        if self._paused and self._pipe is not None:
            self._paused = False
            self._pipe.resume_reading()

    def _take(self, line: bytes) -> None:
        """One line: a plain answer to its waiting call, else a message (or the error the
        session is told about, as the SDK does) queued."""
        try:
            text = line if self._utf8 else line.decode(self._encoding, self._errors)
            data = orjson.loads(text)
        except (UnicodeDecodeError, orjson.JSONDecodeError) as exc:
            log.warning("MCP stdio server sent a line that is not JSON: %s", exc)
            self.put(exc)
            return
        answer = _answer(data)
        if answer is not None:
            request_id, result = answer
            if not self.claimed(request_id, result):
                # Built by its validator: for these three plain fields, half the cost of
                # `model_construct` (pure Python); the result's contents are not looked into.
                response = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
                self.put(SessionMessage(response))
            return
        try:
            message = types.jsonrpc_message_adapter.validate_python(data, by_name=False)
        except ValueError as exc:
            log.warning("MCP stdio server sent an invalid JSON-RPC message: %s", exc)
            self.put(exc)
            return
        self.put(SessionMessage(message))


def _answer(data: Any) -> tuple[int | str, dict[str, Any]] | None:
    """A well-formed answer to a request: its id and result, unvalidated beyond its envelope
    (the session, or the lean call, validates the result); None for anything else."""
    if type(data) is not dict or len(data) != 3 or data.get("jsonrpc") != "2.0":
        return None
    result = data.get("result")
    request_id = data.get("id")
    if type(result) is not dict or type(request_id) not in (int, str):
        return None
    return cast("int | str", request_id), result


class _Writer(TransportWriter):
    """The server's stdin as the session writes it: each message written by its sender.

    On asyncio the pipe's `StreamWriter` (under anyio's wrapper) is written directly: anyio's
    `send` ends with a checkpoint, a trip through the event loop for the sender (and every
    coroutine that awaits it) after each message; here the sender goes on at once unless the
    pipe's buffer is full (`drain`), as a plain `StreamWriter` does.
    """

    def __init__(self, process: Process, encoding: str, errors: str) -> None:
        assert process.stdin is not None
        self._stdin = process.stdin
        stream = getattr(process.stdin, "_stream", None)
        self._direct = stream if isinstance(stream, asyncio.StreamWriter) else None
        self._encoding = encoding
        self._errors = errors
        self._closed = False

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
        data = (text + "\n").encode(self._encoding, self._errors)
        try:
            if self._direct is None:
                await self._stdin.send(data)
            else:
                self._direct.write(data)
                await self._direct.drain()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            raise anyio.BrokenResourceError from exc
        except RuntimeError as exc:  # uvloop's write to a closed pipe
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        self._closed = True


async def _stop(process: Process) -> None:
    """Close the server's stdin, give it time to exit, then end its whole process group;
    its stdout is read meanwhile, so a server writing as it ends is not stuck on the pipe."""
    async with anyio.create_task_group() as draining:
        draining.start_soon(_drain, process)
        await _end(process)
        draining.cancel_scope.cancel()
    assert process.stdout is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()
    # The subprocess transport stays open (and warns when collected) until it is closed.
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError, OSError):
            close()


async def _drain(process: Process) -> None:
    assert process.stdout is not None
    with contextlib.suppress(
        anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError
    ):
        while True:
            await process.stdout.receive(_READ_SIZE)


async def _end(process: Process) -> None:
    assert process.stdin is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, PROCESS_EXIT_S):
        await terminate_posix_process_tree(process, KILL_AFTER_S)
        await _exited(process, KILL_AFTER_S)


async def _exited(process: Process, within_s: float) -> bool:
    """Whether the server exited within `within_s` (by its return code: `wait()` would also
    wait for the end of its pipes, which a child it started may hold open)."""
    with anyio.move_on_after(within_s):
        while process.returncode is None:  # noqa: ASYNC110 - no event tells of an exit
            await anyio.sleep(0.01)
    return process.returncode is not None
