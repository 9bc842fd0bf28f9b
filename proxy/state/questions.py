"""Where the answers to MCP servers' questions, and what the questioned calls did, travel
between replicas: a channel per question and per held batch of calls.

A paused call waits on the replica that made it (its MCP connection is there); the client's
answer may arrive on any replica. Each side pushes to a channel the other blocks on, in
memory within one process, or through Redis lists (`RPUSH`, `BLPOP`) across replicas.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any, Protocol

__all__ = ["MemoryRelay", "Relay"]

Item = dict[str, Any]

MAX_CHANNELS = 10_000


class Relay(Protocol):
    """Named channels of JSON items, each read by one waiter at a time."""

    async def push(self, channel: str, item: Item) -> None:
        """Append `item` to `channel` (kept for a while if nobody reads it)."""
        ...

    async def pop(self, channel: str, timeout_s: float) -> Item | None:
        """The oldest item of `channel`, waiting up to `timeout_s`; None when none came."""
        ...


class MemoryRelay:
    """A Relay in this process: an asyncio queue per channel (the oldest dropped past
    `max_channels`)."""

    def __init__(self, *, max_channels: int = MAX_CHANNELS) -> None:
        self._queues: OrderedDict[str, asyncio.Queue[Item]] = OrderedDict()
        self._max = max_channels

    def _queue(self, channel: str) -> asyncio.Queue[Item]:
        queue = self._queues.get(channel)
        if queue is None:
            queue = self._queues[channel] = asyncio.Queue()
            while len(self._queues) > self._max:
                self._queues.popitem(last=False)
        return queue

    async def push(self, channel: str, item: Item) -> None:
        self._queue(channel).put_nowait(item)

    async def pop(self, channel: str, timeout_s: float) -> Item | None:
        queue = self._queue(channel)
        try:
            async with asyncio.timeout(max(0.0, timeout_s)):
                return await queue.get()
        except TimeoutError:
            return None
