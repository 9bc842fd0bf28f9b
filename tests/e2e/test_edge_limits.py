"""The edge, through the real server: a route asked with the wrong method answers 405 with
`Allow` in its front's error shape; a request's head (line and headers) is bounded in size,
field count and time before anything else looks at it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2 as httpx
import orjson


async def test_a_wrong_method_is_405_with_allow_in_the_fronts_shape(make_proxy: Any) -> None:
    async with make_proxy() as proxy, httpx.AsyncClient(timeout=60) as http:
        root = proxy.base_url.removesuffix("/v1")
        for method, path, allow in (
            ("GET", "/v1/chat/completions", "POST"),
            ("PUT", "/v1/responses", "POST"),
            ("DELETE", "/v1/chat/completions", "POST"),
            ("POST", "/v1/models", "GET, HEAD"),
            ("PUT", "/v1/responses/resp_1", "DELETE, GET, HEAD"),
            ("POST", "/healthz", "GET, HEAD"),
        ):
            answer = await http.request(method, root + path)
            assert answer.status_code == 405, (method, path)
            assert ", ".join(sorted(answer.headers["allow"].split(", "))) == allow
            error = answer.json()["error"]
            assert (
                error["type"] == "invalid_request_error" and error["code"] == "method_not_allowed"
            )
            assert f"{method} is not allowed on {path}" in error["message"]
            assert answer.headers["x-request-id"]
        for method, path in (("GET", "/v1/messages"), ("PUT", "/v1/messages/count_tokens")):
            answer = await http.request(method, root + path)
            assert answer.status_code == 405 and answer.headers["allow"] == "POST"
            body = answer.json()
            assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        # Unknown paths stay 404, in the front's shape too.
        assert (await http.get(f"{root}/v1/nowhere")).status_code == 404
        missing = await http.get(f"{root}/v1/messages/nowhere")
        assert missing.status_code == 404 and missing.json()["type"] == "error"


LIMITS = {"max_header_bytes": 4096, "max_headers": 20, "header_timeout_s": 0.3}
AUTH = {"keys": [{"name": "team-a", "key": "sk-team-a"}]}
DEADLINE_S = 10
"""How long a test waits for the server to answer or close (its limits are far shorter)."""


async def exchange(root: str, *parts: bytes | AsyncIterator[bytes]) -> bytes:
    """Send `parts` (bytes, or bytes made as they are sent) on a new connection and read
    until the server closes it; b"" when it resets the connection (closing it while the
    client still writes resets it, and the reset may discard the answer)."""
    host, port = root.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        with contextlib.suppress(ConnectionError):
            async with asyncio.timeout(DEADLINE_S):
                for part in parts:
                    chunks = part if not isinstance(part, bytes) else _once(part)
                    async for chunk in chunks:
                        writer.write(chunk)
                        await writer.drain()
        async with asyncio.timeout(DEADLINE_S):
            try:
                return await reader.read()
            except ConnectionResetError:
                return b""
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def _once(part: bytes) -> AsyncIterator[bytes]:
    yield part


def request(path: str = "/healthz", *headers: str, end: bool = True) -> bytes:
    lines = [f"GET {path} HTTP/1.1", "host: 127.0.0.1", *headers]
    return ("\r\n".join(lines) + ("\r\nconnection: close\r\n\r\n" if end else "\r\n")).encode()


def status_and_body(answer: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), orjson.loads(body)


async def head_refused(root: str, size: int) -> int:
    """The status a request with one header of `size` bytes gets."""
    answer = await exchange(root, request("/healthz", "x-big: " + "a" * size))
    return int(answer.split()[1])


async def test_request_heads_are_bounded_before_authentication(make_proxy: Any) -> None:
    async with make_proxy(server=LIMITS, auth=AUTH) as proxy:
        root = proxy.base_url.removesuffix("/v1")
        # Within the limits (20 fields with host and connection): the edge asks for a key.
        fields = [f"x-h{i}: v" for i in range(18)]
        assert (await exchange(root, request("/v1/models", *fields))).startswith(b"HTTP/1.1 401")
        big = request("/v1/models", "x-big: " + "a" * 3900)
        assert (await exchange(root, big)).startswith(b"HTTP/1.1 401")

        one_more = request("/v1/models", *fields, "x-one-more: v")
        status, body = status_and_body(await exchange(root, one_more))
        assert status == 431 and "more than 20 header fields" in body["error"]["message"]
        big = request("/v1/models", "x-big: " + "a" * 5000)
        status, body = status_and_body(await exchange(root, big))
        assert status == 431 and body["error"]["code"] == "request_header_fields_too_large"
        assert "4096 bytes" in body["error"]["message"]
        big = request("/v1/messages", "x-big: " + "a" * 5000)
        status, body = status_and_body(await exchange(root, big))
        assert status == 431 and body["type"] == "error"
        long_url = request("/v1/models?q=" + "a" * 5000)
        assert (await exchange(root, long_url)).startswith(b"HTTP/1.1 431")

        # One endless header: refused and closed after a few KiB, not buffered to its end
        # (the client, still sending, may get a reset rather than the 431).
        chunk = b"a" * 65536
        total = 64 * 1024 * 1024
        sent = 0

        async def endless() -> AsyncIterator[bytes]:
            nonlocal sent
            yield request("/v1/models", end=False) + b"x-endless: "
            while sent < total:
                sent += len(chunk)
                yield chunk

        answer = await exchange(root, endless())
        assert answer == b"" or answer.startswith(b"HTTP/1.1 431")
        assert sent < total, sent


async def test_a_head_sent_too_slowly_or_never_loses_its_connection(make_proxy: Any) -> None:
    async with make_proxy(server=LIMITS) as proxy:
        root = proxy.base_url.removesuffix("/v1")
        # Half a request, then nothing: 408, closed.
        status, body = status_and_body(await exchange(root, request(end=False)))
        assert status == 408 and body["error"]["code"] == "request_timeout"
        # A connection that never sends a byte is closed too.
        assert await exchange(root) == b""
        # Kept-alive connections still serve request after request.
        async with httpx.AsyncClient(timeout=60) as http:
            for _ in range(3):
                assert (await http.get(f"{root}/healthz")).status_code == 200
