"""A stdio MCP server's stderr: passed on to the log line by line, its last lines kept.

A server that cannot start (a module that is not installed, a missing configuration) says
why on its stderr and exits; the session then sees only a closed connection. The last lines
kept here let that error say what the server said.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections import deque
from collections.abc import AsyncIterator
from typing import TextIO

import anyio

__all__ = ["EOF_WAIT_S", "MAX_CHARS", "MAX_LINES", "ServerStderr"]

log = logging.getLogger("toolwire.mcp.stderr")

MAX_LINES = 20
"""Lines kept: enough for a Python traceback."""
MAX_CHARS = 2048
"""Characters kept of those lines, the last ones; a longer line keeps its end."""
EOF_WAIT_S = 0.5
"""How long a closing capture waits for the last of the stderr (the server has been stopped,
but a child of it that left its process group may hold the pipe open)."""


class ServerStderr(asyncio.Protocol):
    """The stderr of one server process: each line is logged on `toolwire.mcp.stderr`, the last
    `MAX_LINES` (at most `MAX_CHARS`) are kept for error messages."""

    def __init__(self, label: str) -> None:
        self._label = label
        self._lines: deque[str] = deque(maxlen=MAX_LINES)
        self._partial = b""
        self._ended = asyncio.Event()

    @property
    def ended(self) -> bool:
        """The pipe reached its end: every process that held it closed it (exited, mostly)."""
        return self._ended.is_set()

    @contextlib.asynccontextmanager
    async def capture(self) -> AsyncIterator[TextIO]:
        """A pipe for the server's stderr (its `errlog`), read while the block runs.

        Close the pipe once the server runs: this process's copy of the write end would keep
        it from ever ending. On exit the rest is read (for at most `EOF_WAIT_S`) before the
        pipe is closed.

        Raises:
            OSError: no pipe could be made.
        """
        read_fd, write_fd = os.pipe()
        reader = os.fdopen(read_fd, "rb", buffering=0)
        writer = os.fdopen(write_fd, "w")
        try:
            transport, _ = await asyncio.get_running_loop().connect_read_pipe(lambda: self, reader)
        except BaseException:
            reader.close()
            writer.close()
            raise
        try:
            yield writer
        finally:
            writer.close()
            try:
                with anyio.move_on_after(EOF_WAIT_S):
                    await self._ended.wait()
            finally:
                transport.close()

    @property
    def lines(self) -> list[str]:
        """The last lines, within `MAX_CHARS` together (the earliest one may keep only its end)."""
        kept: list[str] = []
        room = MAX_CHARS
        for line in reversed(self._lines):
            if len(line) > room:
                if room > 1:
                    kept.append("…" + line[len(line) - room + 1 :])
                break
            kept.append(line)
            room -= len(line)
        return kept[::-1]

    def summary(self) -> str:
        """`its stderr ends: <the last lines>`, or that it wrote nothing."""
        lines = self.lines
        return f"its stderr ends: {' | '.join(lines)}" if lines else "nothing on its stderr"

    def data_received(self, data: bytes) -> None:
        *complete, partial = (self._partial + data).split(b"\n")
        # A line that does not end is kept by its end, within bounds.
        self._partial = partial[-MAX_CHARS * 4 :]
        for raw in complete:
            self._add(raw)

    def eof_received(self) -> bool:
        self._ended.set()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        # A last line without its newline counts too.
        self._add(self._partial)
        self._partial = b""
        self._ended.set()

    def _add(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").strip()
        if not line:
            return
        if len(line) > MAX_CHARS:
            line = "…" + line[len(line) - MAX_CHARS + 1 :]
        self._lines.append(line)
        log.info("MCP server %s: %s", self._label, line)
