"""Server-sent events: decoding an upstream byte stream, encoding frames for the client.

The only module that knows SSE framing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

DONE = b"data: [DONE]\n\n"


class SSEDecodeError(Exception):
    """The byte stream is not usable SSE (a line past the size limit)."""


def encode(payload: Any) -> bytes:
    """One `data:` frame holding `payload` as JSON."""
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def encode_raw(json_bytes: bytes) -> bytes:
    """One `data:` frame around already-serialized JSON."""
    return b"data: " + json_bytes + b"\n\n"


def comment(text: str = "keep-alive") -> bytes:
    """A comment frame: clients ignore it, proxies see traffic."""
    return b": " + text.encode() + b"\n\n"


async def decode(
    chunks: AsyncIterator[bytes], *, max_line: int = 8 * 1024 * 1024
) -> AsyncIterator[str]:
    """Yield the data of each event of a byte stream (multi-line data joined by newlines).

    Handles events split anywhere across reads (UTF-8 included), CRLF line ends, comments,
    and `event:`/`id:` fields, which are ignored.

    Raises:
        SSEDecodeError: a line grows past `max_line` bytes.
    """
    buffer = b""
    data: list[bytes] = []
    async for chunk in chunks:
        buffer += chunk
        while True:
            end = buffer.find(b"\n")
            if end < 0:
                if len(buffer) > max_line:
                    raise SSEDecodeError(f"an event line exceeds {max_line} bytes")
                break
            line = buffer[:end].rstrip(b"\r")
            buffer = buffer[end + 1 :]
            if not line:
                if data:
                    yield b"\n".join(data).decode("utf-8")
                    data = []
            elif line.startswith(b"data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(b" ") else value)
    if buffer.startswith(b"data:"):
        value = buffer[5:].rstrip(b"\r")
        data.append(value[1:] if value.startswith(b" ") else value)
    if data:
        yield b"\n".join(data).decode("utf-8")
