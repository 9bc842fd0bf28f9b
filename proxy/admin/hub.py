"""Live updates for the admin API: registry changes and tool calls, to every subscriber."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from registry import CallEvent, ToolRegistry, ToolResult

Event = tuple[str, dict[str, Any]]
"""An event's name and its JSON data."""
_QUEUE_SIZE = 256
_CLOSED: Event = ("closed", {})


class EventHub:
    """Fans events out to subscribers; one too slow to keep up loses events, never blocks
    the proxy (its queue is bounded and a full queue drops the event)."""

    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[Event]] = set()

    def publish(self, name: str, data: dict[str, Any]) -> None:
        """Send an event to every subscriber, now."""
        for queue in self._queues:
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait((name, data))

    @contextlib.contextmanager
    def subscription(self) -> Iterator[asyncio.Queue[Event]]:
        """A queue that receives every event published while the block runs."""
        queue: asyncio.Queue[Event] = asyncio.Queue(_QUEUE_SIZE)
        self._queues.add(queue)
        try:
            yield queue
        finally:
            self._queues.discard(queue)

    async def stream(self, first: Event) -> AsyncIterator[Event]:
        """`first`, then every event, until the hub closes."""
        with self.subscription() as queue:
            yield first
            while (event := await queue.get()) is not _CLOSED:
                yield event

    def close(self) -> None:
        """End every stream (at shutdown)."""
        for queue in self._queues:
            # A full queue's reader is behind anyway; make room for the end.
            with contextlib.suppress(asyncio.QueueEmpty):
                if queue.full():
                    queue.get_nowait()
            queue.put_nowait(_CLOSED)

    def registry_changed(self, registry: ToolRegistry) -> None:
        """The registry's `on_change` callback."""
        self.publish("registry", {"version": registry.version, "tools": len(registry)})


class CallFeed:
    """The executor's listener that publishes every finished call and permission decision."""

    def __init__(self, hub: EventHub) -> None:
        self._hub = hub

    def after_call(self, event: CallEvent, result: ToolResult) -> None:
        self._hub.publish(
            "call",
            {
                "tool": event.tool.qualified_name,
                "call_id": event.call.id,
                "request_id": event.request_id,
                "outcome": result.error_kind or ("error" if result.is_error else "ok"),
                "at": time.time(),
            },
        )

    def on_permission(self, event: CallEvent, outcome: str, reason: str) -> None:
        self._hub.publish(
            "permission",
            {
                "tool": event.tool.qualified_name,
                "call_id": event.call.id,
                "request_id": event.request_id,
                "outcome": outcome,
                "reason": reason,
                "at": time.time(),
            },
        )
