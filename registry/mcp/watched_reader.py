"""The transport's read stream as the session reads it: its end noticed with no call in
flight, and the lean path's answers taken out before the session sees them."""

from __future__ import annotations

from collections.abc import Callable

import anyio
from mcp.client._transport import ReadStream

from registry.mcp.inbox import Inbox
from registry.mcp.lean_calls import LeanCalls
from registry.mcp.transport_streams import Item, TransportReader

__all__ = ["WatchedReader"]


class WatchedReader(TransportReader):
    """The transport's read stream as the session reads it, calling `on_end` when it ends.

    The SDK gives no public signal that a transport ended, and a dead stdio server or a
    dropped HTTP stream must be noticed even when no call is in flight: the session's
    receive loop always reads, so its reads see the end. (Not a relay task: that cost a
    memory-stream hop and a task switch per message.) A broken or closed transport stream
    ends like an exhausted one, and the sender's context is not passed on. The answers to
    `lean`'s calls are handed to it here, and never reach the session.
    """

    def __init__(
        self, read: ReadStream[Item], on_end: Callable[[], None], lean: LeanCalls | None = None
    ) -> None:
        self._read = read
        self._on_end = on_end
        self._lean = lean
        if lean is not None and isinstance(read, Inbox):
            read.claim = lean.take  # the transport hands a lean call its result itself

    async def receive(self) -> Item:
        try:
            item = await self._read.receive()
            while self._lean is not None and self._lean.answer(item):
                item = await self._read.receive()
            return item
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._ended()
            raise anyio.EndOfStream from None

    def _ended(self) -> None:
        self._on_end()
        if self._lean is not None:
            self._lean.close()

    async def aclose(self) -> None:
        self._ended()
        await self._read.aclose()
