"""The read side of the Streamable HTTP transport: the messages a server sent, queued by the
tasks whose requests they answered, read by the session's receive loop; or a result handed
straight to the call that waits for it (`claimed`), which then goes on without a task switch."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from registry.mcp.transport_streams import Item, TransportReader

__all__ = ["Inbox"]


class Inbox(TransportReader):
    """What the server sent, as the session reads it: queued by the tasks that sent the
    requests it answers (`put`), ended when the connection fails (`end`)."""

    def __init__(self) -> None:
        self._items: deque[Item] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._end: type[anyio.BrokenResourceError | anyio.EndOfStream] | None = None
        self._closed = False
        self._handled = False
        """The last message read was one the session handles in a task of its own."""
        self.claim: Callable[[types.RequestId, dict[str, Any]], bool] | None = None
        """Hands a request's result to the call waiting for it (`LeanCalls.take`), or says no."""
        self._loop: asyncio.AbstractEventLoop | None = None

    def put(self, item: Item) -> None:
        self._items.append(item)
        self._wake()

    def claimed(self, request_id: types.RequestId, result: dict[str, Any]) -> bool:
        """Whether a request's result went straight to the call waiting for it (`claim`):
        only when nothing waits in the queue before it (nothing the session should see
        first). That call's task, the sender, then finds its answer without a message made
        of it, and without waiting for the receive loop to read it and wake it."""
        claim = self.claim
        return claim is not None and not self._items and claim(request_id, result)

    def end(
        self, kind: type[anyio.BrokenResourceError | anyio.EndOfStream] = anyio.BrokenResourceError
    ) -> None:
        """The transport broke (or ended: `kind`): the session reads what was queued, then
        the end."""
        if self._end is None:
            self._end = kind
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def receive(self) -> Item:
        while not self._items:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._end is not None:
                raise self._end
            loop = self._loop
            if loop is None:  # kept: each running-loop lookup is a system call on 3.11
                loop = self._loop = asyncio.get_running_loop()
            self._waiter = loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = self._items.popleft()
        if not isinstance(item, SessionMessage):
            return item
        answer = isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError)
        if answer and self._handled:
            # The session handles what came before an answer (progress, questions) in tasks
            # of their own: they get their turn before the answer ends the call.
            await asyncio.sleep(0)
        self._handled = not answer
        return item

    async def aclose(self) -> None:
        self._closed = True
        self._wake()
