"""Which call a 2025-era server's request belongs to, on Streamable HTTP.

A server asks its client (`elicitation/create`, `sampling/createMessage`) mid-call on the
call's own response stream, but the request names no call. The HTTP layer can tell: it
sees each `tools/call` POST (with the call's unique `progressToken` in `_meta`) and the
event stream that answers it. `Origins` is an httpx response hook that reads those streams
as they pass to the SDK and notes, for each server request on one, the progress token of
the call it came with; the session's callbacks then find the call by it.

Only the head of each event is looked at: a large result is passed on without being kept.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator

import httpx2
import orjson

__all__ = ["Origins"]

_ASKS = (b'"elicitation/create"', b'"sampling/createMessage"')
_HEAD_BYTES = 4096
"""An event whose first bytes name no such method is passed on without being kept."""
_MAX_EVENT_BYTES = 1 << 20
"""A question larger than this is not followed (its call is then found as without origin)."""
MAX_REMEMBERED = 1000


class Origins:
    """The call (its progress token) each server request came with, by the request's id."""

    def __init__(self) -> None:
        self._calls: OrderedDict[str, str] = OrderedDict()

    def call_of(self, request_id: object) -> str | None:
        """The progress token of the call whose stream carried the request `request_id`."""
        return self._calls.pop(str(request_id), None)

    async def watch(self, response: httpx2.Response) -> None:
        """The httpx response hook: follow a `tools/call` POST's event stream."""
        if response.request.method != "POST":
            return
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            return
        token = _progress_token(response.request)
        stream = response.stream
        if token is not None and isinstance(stream, httpx2.AsyncByteStream):
            response.stream = _Followed(stream, token, self)

    def note(self, request_id: object, token: str) -> None:
        self._calls[str(request_id)] = token
        while len(self._calls) > MAX_REMEMBERED:
            self._calls.popitem(last=False)


class _Followed(httpx2.AsyncByteStream):
    """A response stream read on its way to the SDK, its server requests noted."""

    def __init__(self, stream: httpx2.AsyncByteStream, token: str, origins: Origins) -> None:
        self._stream = stream
        self._token = token
        self._origins = origins
        self._pending = b""
        """The event read so far (only its last byte while it is being skipped)."""
        self._skipping = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            self._read(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()

    def _read(self, chunk: bytes) -> None:
        data = self._pending + chunk
        carried = b"\r" if data.endswith(b"\r") else b""  # its \n may come in the next chunk
        *events, rest = data[: len(data) - len(carried)].replace(b"\r\n", b"\n").split(b"\n\n")
        for index, event in enumerate(events):
            if not (index == 0 and self._skipping):
                self._finish(event)
        if events:
            self._skipping = False
        too_long = len(rest) > _MAX_EVENT_BYTES or (
            len(rest) > _HEAD_BYTES and not _asks(rest[:_HEAD_BYTES])
        )
        if self._skipping or too_long:
            self._skipping = True
            rest = rest[-1:]
        self._pending = rest + carried

    def _finish(self, event: bytes) -> None:
        if not _asks(event):
            return
        data = b"\n".join(
            line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:")
        )
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        if isinstance(message, dict) and "id" in message and "method" in message:
            self._origins.note(message["id"], self._token)


def _asks(head: bytes | bytearray) -> bool:
    return any(method in head for method in _ASKS)


def _progress_token(request: httpx2.Request) -> str | None:
    """The progress token of a `tools/call` request's `_meta`, if it has one."""
    try:
        body = request.content
    except httpx2.RequestNotRead:
        return None
    if b'"tools/call"' not in body or b'"progressToken"' not in body:
        return None
    try:
        token = orjson.loads(body)["params"]["_meta"]["progressToken"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    return str(token) if isinstance(token, str | int) else None
