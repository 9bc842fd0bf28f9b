"""Resumable SSE streams on `/mcp`: the events each stream sent, kept (bounded) so that a
client whose stream broke mid-call reconnects with `Last-Event-ID` and gets what it missed.

A stream opens with a priming event (an id and empty data) and a `retry` hint, so even a
client that lost the stream before the first message knows where to resume from. Sessions
live in the process that opened them, and so do their events: memory is the right place.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict, defaultdict

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types.jsonrpc import JSONRPCMessage

MAX_EVENTS = 10_000
"""Events kept per process, all streams together; the oldest go first."""
RETRY_MS = 1000
"""How long a client whose stream ended waits before it reconnects (the SSE `retry`)."""


class StreamEvents(EventStore):
    """The last `max_events` events of every stream, in memory."""

    def __init__(self, max_events: int = MAX_EVENTS) -> None:
        self._max_events = max_events
        self._prefix = secrets.token_urlsafe(6)
        self._next = 0
        self._events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None]] = OrderedDict()
        self._by_stream: defaultdict[StreamId, list[EventId]] = defaultdict(list)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        self._next += 1
        event_id = f"{self._prefix}-{self._next}"
        self._events[event_id] = (stream_id, message)
        self._by_stream[stream_id].append(event_id)
        while len(self._events) > self._max_events:
            dropped, (stream, _) = self._events.popitem(last=False)
            kept = self._by_stream[stream]
            kept.remove(dropped)
            if not kept:
                del self._by_stream[stream]
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        found = self._events.get(last_event_id)
        if found is None:
            return None
        stream_id = found[0]
        events = self._by_stream[stream_id]
        for event_id in events[events.index(last_event_id) + 1 :]:
            message = self._events[event_id][1]
            if message is not None:  # a priming event carries nothing to replay
                await send_callback(EventMessage(message, event_id))
        return stream_id
