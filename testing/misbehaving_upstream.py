"""A raw HTTP/1.1 server that misbehaves on cue, for what a well-behaved aiohttp server cannot do.

Each request is answered by the next scripted `Act`: raw response bytes, then keep the
connection, close it (FIN) or reset it (RST); or hang up before answering at all. Streams can
end cleanly without `[DONE]`, bodies can be cut, pooled connections can die under a request.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import orjson

Then = Literal["keep", "fin", "reset"]


@dataclass(frozen=True)
class Act:
    """What the server does with one request: write `reply`, then keep, close or reset."""

    reply: bytes = b""
    then: Then = "keep"

    @classmethod
    def answer(cls, reply: bytes, *, then: Then = "keep") -> Act:
        """Write `reply` (status line, headers, body), then keep the connection or end it."""
        return cls(reply, then)

    @classmethod
    def hang_up(cls) -> Act:
        """Close the connection (FIN) as the request arrives, without answering."""
        return cls(b"", "fin")

    @classmethod
    def reset(cls) -> Act:
        """Reset the connection (RST) as the request arrives, without answering."""
        return cls(b"", "reset")


def json_reply(payload: Any, *, status: int = 200) -> bytes:
    """A complete JSON response with a Content-Length; the connection stays usable."""
    body = orjson.dumps(payload)
    head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
    return head.encode() + b"\r\n\r\n" + body


def sse_reply(events: Iterable[Any], *, done: bool = False, framing: str = "chunked") -> bytes:
    """A 200 event stream of `events` (dicts as JSON, bytes as they are), ending cleanly.

    `framing` "chunked" ends with the terminating chunk; "close" sends no length at all, so the
    body ends where the server closes the connection (use with `then="fin"`).
    """
    frames = [
        b"data: " + (e if isinstance(e, bytes) else orjson.dumps(e)) + b"\n\n" for e in events
    ]
    if done:
        frames.append(b"data: [DONE]\n\n")
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
    if framing == "close":
        return head + b"Connection: close\r\n\r\n" + b"".join(frames)
    body = b"".join(b"%x\r\n%s\r\n" % (len(f), f) for f in frames)
    return head + b"Transfer-Encoding: chunked\r\n\r\n" + body + b"0\r\n\r\n"


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    """One `chat.completion.chunk` carrying `delta`."""
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}


def completion(content: str) -> dict[str, Any]:
    """A whole `chat.completion` answering `content`."""
    message = {"role": "assistant", "content": content}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return {"id": "c1", "object": "chat.completion", "model": "m", "choices": [choice]}


class MisbehavingUpstream:
    """Scripted raw server: each request takes the next act, then `default`."""

    def __init__(self, *acts: Act, default: Act | None = None) -> None:
        self.default = default or Act.hang_up()
        self.requests: list[bytes] = []
        self.connections = 0
        self.base_url = ""
        self._acts = deque(acts)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> MisbehavingUpstream:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            writer.close()
        async with asyncio.timeout(5):
            await asyncio.gather(*self._tasks, return_exceptions=True)
            if self._server is not None:
                await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        self.connections += 1
        try:
            while await self._answer(reader, writer):
                pass
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False once the connection is over."""
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        self.requests.append(await reader.readexactly(length))
        act = self._acts.popleft() if self._acts else self.default
        if act.reply:
            writer.write(act.reply)
            await writer.drain()
        if act.then == "reset":
            # Linger 0: close() sends RST instead of FIN, as a crashed or restarted server does.
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        return act.then == "keep"
