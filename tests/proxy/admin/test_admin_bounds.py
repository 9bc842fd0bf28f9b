"""What the admin API takes: finite numbers within bounds (422 otherwise, never a 500) and
bodies within `server.max_body_bytes` (413, read no further than the limit)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import httpx2 as httpx

from tests.e2e.tools import registry_with

ADMIN = "admin-key-0001"
JSON = {"content-type": "application/json"}


@contextlib.asynccontextmanager
async def admin_api(make_proxy: Any, **sections: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with make_proxy(registry_with(), admin={"key": ADMIN}, **sections) as proxy:
        root = proxy.base_url.removesuffix("/v1")
        headers = {"authorization": f"Bearer {ADMIN}"}
        async with httpx.AsyncClient(
            timeout=60, base_url=f"{root}/admin/api", headers=headers
        ) as admin:
            yield admin


async def test_timeouts_must_be_finite_and_at_most_a_day(make_proxy) -> None:
    async with admin_api(make_proxy) as admin:
        every = [
            ("Infinity", "finite number"),
            ("-Infinity", "finite number"),
            ("NaN", "finite number"),
            ("1e308", "less than or equal to 86400"),
            ("86400.5", "less than or equal to 86400"),
        ]
        attempts = [
            ("PATCH", "/tools/t.nap", '{"timeout_s": %s}', every),
            ("PATCH", "/namespaces/t", '{"timeout_s": %s}', every[2:4]),
            (
                "POST",
                "/state",
                '{"tools": {"t.nap": {"metadata": {"timeout_s": %s}}}}',
                every[:4:3],
            ),
        ]
        for method, path, body, values in attempts:
            for value, message in values:
                answer = await admin.request(method, path, content=body % value, headers=JSON)
                assert answer.status_code == 422, (method, path, value, answer.text)
                error = answer.json()["error"]
                assert error["param"].endswith("timeout_s") and message in error["message"]
        tool = (await admin.get("/tools/t.nap")).json()
        assert tool["timeout_s"] == 0.2  # as registered: nothing was applied
        day = await admin.patch("/tools/t.nap", json={"timeout_s": 86400})
        assert day.status_code == 200 and day.json()["timeout_s"] == 86400


async def test_log_filters_must_be_finite_and_within_bounds(make_proxy) -> None:
    async with admin_api(make_proxy) as admin:
        for params in [{"since": "nan"}, {"until": "inf"}, {"offset": str(10**12)}]:
            answer = await admin.get("/log", params=params)
            assert answer.status_code == 422, (params, answer.text)
        assert (await admin.get("/log", params={"since": "0", "offset": "10"})).status_code == 200


async def test_a_body_past_max_body_bytes_is_413(make_proxy) -> None:
    async with admin_api(make_proxy, server={"max_body_bytes": 4096}) as admin:
        body = b'{"reason": "' + b"x" * 5000 + b'"}'
        answer = await admin.post("/tools/t.nap/disable", content=body, headers=JSON)
        assert answer.status_code == 413
        message = "the request body exceeds 4096 bytes (server.max_body_bytes)"
        assert answer.json()["error"]["message"] == message
        root = str(admin.base_url)
        status, sent = await _stream_until_answered(root, "/tools/t.nap/disable")
        assert status == 413
        assert sent < _ENDLESS  # the server answered without reading the body to its end
        assert (await admin.get("/tools/t.nap")).json()["enabled"] is True


_ENDLESS = 64 * 1024 * 1024
"""More than a loopback connection buffers: a server that reads it all answers only after."""


async def _stream_until_answered(api: str, path: str) -> tuple[int, int]:
    """POST a chunked body (no Content-Length) that goes on until the server answers; the
    status, and how many bytes of the body were sent by then."""
    url = urlsplit(api.rstrip("/") + path)
    assert url.hostname is not None and url.port is not None
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    head = (
        f"POST {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\nAuthorization: Bearer {ADMIN}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    writer.write(head.encode() + _chunk(b'{"reason": "'))
    sent = 0

    async def send() -> None:
        nonlocal sent
        piece = b"x" * 16384
        with contextlib.suppress(ConnectionError):
            while sent < _ENDLESS:
                writer.write(_chunk(piece))
                await writer.drain()
                sent += len(piece)
            writer.write(_chunk(b'"}') + b"0\r\n\r\n")
            await writer.drain()

    sending = asyncio.create_task(send())
    try:
        async with asyncio.timeout(30):
            status_line = await reader.readline()
    finally:
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sending
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    return int(status_line.split()[1]), sent


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)
