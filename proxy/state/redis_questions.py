"""The question relay in Redis: a list per channel, pushed with `RPUSH`, read with `BLPOP`
(in short waits, under the client's reply timeout), expiring with the pending turns."""

from __future__ import annotations

import time

import orjson

from .cancels import end_if_cancelled
from .questions import Item
from .redis import RedisState, reaching

__all__ = ["RedisRelay"]

_WAIT_S = 1.0
"""One `BLPOP`'s wait: below the connection's reply timeout (2 s)."""


class RedisRelay:
    """A Relay shared by every replica on one Redis."""

    def __init__(self, state: RedisState, *, ttl_s: float) -> None:
        self._state = state
        self._ttl_ms = max(1, int(ttl_s * 1000))

    async def push(self, channel: str, item: Item) -> None:
        """Raises StateUnavailableError."""
        key = self._state.key("relay", channel)
        with reaching("relaying an answer"):
            await self._state.client.rpush(key, orjson.dumps(item))
            await self._state.client.pexpire(key, self._ttl_ms)

    async def pop(self, channel: str, timeout_s: float) -> Item | None:
        """Raises StateUnavailableError."""
        key = self._state.key("relay", channel)
        deadline = time.monotonic() + timeout_s
        while True:
            end_if_cancelled()  # a cancellation a BLPOP dropped ends the wait too
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            with reaching("waiting for a relayed answer"):
                found = await self._state.client.blpop([key], timeout=max(0.01, min(_WAIT_S, left)))
            if found is not None:
                return orjson.loads(found[1])
