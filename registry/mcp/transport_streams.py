"""The stream protocol the mcp SDK's session reads and writes a transport by, once for
Toolwire's own transports (stdio.py, streamable_http.py).

The session takes anyio memory-object streams; a transport of Toolwire's gives it objects
with the same methods instead, whose `receive` and `send` do the transport's work in the
calling task (see stdio.py for why). What is the same for every transport lives here: async
iteration over `receive`, ending at the end of the stream, and the async context that closes.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

import anyio
from mcp.shared.message import SessionMessage

Item = SessionMessage | Exception
"""What the session reads: a message, or an error the transport hands it as it is."""


class TransportReader:
    """A transport's read side: `receive` the next item; iteration ends at the stream's end."""

    async def receive(self) -> Item:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Stop reading."""

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class TransportWriter:
    """A transport's write side: `send` one message."""

    async def send(self, item: SessionMessage, /) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Stop writing."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()
