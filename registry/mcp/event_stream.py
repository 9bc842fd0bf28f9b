"""Server-sent events read from the bytes of an MCP server's event stream.

Only what a Streamable HTTP client needs: each `message` event's data (its `data:` lines
joined), the last event id (to resume a stream with `Last-Event-ID`) and the `retry` delay
the server asked for; an event of another type is logged and skipped, and one longer than
the limit ends the stream (`EventTooLong`).
"""

from __future__ import annotations

import logging

__all__ = ["EventStream", "EventTooLong"]

log = logging.getLogger("toolwire.mcp")


class EventTooLong(Exception):
    """An event longer than the limit (the stream is not followed further)."""


class EventStream:
    """Server-sent events parsed from a byte stream: each event's data, its id and retry kept."""

    def __init__(self, limit: int, before: EventStream | None = None) -> None:
        self._limit = limit
        self._rest = b""
        self._data: list[bytes] = []
        self._size = 0
        self._kind = b""
        self._failed: EventTooLong | None = None
        self.last_id: str | None = before.last_id if before is not None else None
        self.retry_ms: int | None = before.retry_ms if before is not None else None

    def feed(self, chunk: bytes) -> list[bytes]:
        """The data of each `message` event `chunk` completes (priming events, with no data,
        only move the last id on); a list, not a generator, whose every resumption costs.

        Raises:
            EventTooLong: an event is longer than the limit.
        """
        if self._failed is not None:
            raise self._failed
        lines = (self._rest + chunk).splitlines(keepends=True)
        # An unfinished line (or one ending in CR, whose LF may come next) waits for more.
        self._rest = lines.pop() if lines and not lines[-1].endswith(b"\n") else b""
        if len(self._rest) > self._limit:
            raise EventTooLong(f"an event longer than {self._limit} bytes")
        found: list[bytes] = []
        for line in lines:
            line = line.rstrip(b"\r\n")
            if not line:
                data = self._dispatch()
                if data is not None:
                    found.append(data)
                continue
            name, _, value = line.partition(b":")
            if value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                self._size += len(value) + 1
                if self._size > self._limit:
                    return self._overflow(found)
                self._data.append(value)
            elif name == b"event":
                self._kind = value
            elif name == b"id" and value.find(b"\0") < 0:
                self.last_id = value.decode(errors="replace")
            elif name == b"retry" and value.isdigit():
                self.retry_ms = int(value)
        return found

    def _overflow(self, found: list[bytes]) -> list[bytes]:
        """An event past the limit: raised now, or after the events before it are read."""
        failure = EventTooLong(f"an event longer than {self._limit} bytes")
        if not found:
            raise failure
        self._failed = failure
        return found

    def _dispatch(self) -> bytes | None:
        data, kind = self._data, self._kind
        self._data, self._kind, self._size = [], b"", 0
        if kind not in (b"", b"message"):
            log.warning("MCP server sent an unknown event: %s", kind.decode(errors="replace"))
            return None
        return b"\n".join(data) if data and any(data) else None
