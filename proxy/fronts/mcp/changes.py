"""`notifications/tools/list_changed` for MCP clients when the registry changes.

A handshake session (2025-11-25 and before) hears it on its standalone GET stream; a
2026-07-28 client hears it on the `subscriptions/listen` stream it opened. Changes come
in bursts (a source reload replaces every tool of the source), so they are coalesced:
one change pending is enough, and each session hears one notification per burst.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from registry import ToolRegistry

log = logging.getLogger("toolwire.mcp")

SEND_TIMEOUT_S = 5.0
"""How long one session's notification may take before it is given up (a stalled client
must not hold up the others)."""


class ToolChanges:
    """Tells connected MCP clients that the tool list changed.

    Use it as server middleware (it notes each handshake session as the session makes
    requests), serve `listen` as `subscriptions/listen`, give `registry_changed` to the
    registry's `on_change`, and run `delivering` while the server runs.
    """

    def __init__(self) -> None:
        self._sessions: set[Connection] = set()
        self._bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self._bus)
        # One pending change is enough: a second one while it waits adds nothing.
        self._pending, self._changes = anyio.create_memory_object_stream[None](1)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        connection = _connection_of(ctx)
        if (
            connection is not None
            and connection.protocol_version not in MODERN_PROTOCOL_VERSIONS
            and connection not in self._sessions
        ):
            self._sessions.add(connection)
            connection.exit_stack.callback(self._sessions.discard, connection)
        return await call_next(ctx)

    def registry_changed(self, registry: ToolRegistry) -> None:
        """The registry's `on_change` callback: note a change; delivery is `delivering`'s."""
        with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError):
            self._pending.send_nowait(None)

    @contextlib.asynccontextmanager
    async def delivering(self) -> AsyncIterator[None]:
        """Deliver noted changes while the block runs; at its end, end the listen streams."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._deliver)
            try:
                yield
            finally:
                self.listen.close()
                self._pending.close()

    async def _deliver(self) -> None:
        async with self._changes:
            async for _ in self._changes:
                async with anyio.create_task_group() as group:
                    for session in list(self._sessions):
                        group.start_soon(_notify, session)
                await self._bus.publish(ToolsListChanged())


def _connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection | None:
    """The connection a request came on.

    The SDK's request context does not expose it yet (its `Context` rework will, as
    `ctx.connection`); the session holds it.
    """
    connection = getattr(ctx.session, "_connection", None)
    return connection if isinstance(connection, Connection) else None


async def _notify(session: Connection) -> None:
    """One handshake session's notification; the SDK drops it when the client has no
    standalone stream open."""
    with anyio.move_on_after(SEND_TIMEOUT_S) as scope:
        await session.send_tool_list_changed()
    if scope.cancelled_caught:
        log.warning("an MCP session did not take the tools/list_changed notice in time")
