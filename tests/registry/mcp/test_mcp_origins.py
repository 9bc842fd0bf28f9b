"""Which call a server's request came with, read from the call's event stream however the
stream is cut into chunks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import httpx2
import orjson
import pytest

from registry.mcp.origins import Origins

CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "book", "arguments": {}, "_meta": {"progressToken": "p-1"}},
}


def _event(message: Mapping[str, object], crlf: bool = False) -> bytes:
    text = b"event: message\ndata: " + orjson.dumps(message) + b"\n\n"
    return text.replace(b"\n", b"\r\n") if crlf else text


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, data: bytes, size: int) -> None:
        self._parts = [data[i : i + size] for i in range(0, len(data), size)]

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self._parts:
            yield part


async def _follow(data: bytes, size: int, body: dict[str, object] = CALL) -> tuple[Origins, bytes]:
    origins = Origins()
    request = httpx2.Request("POST", "http://mcp.test/mcp", content=orjson.dumps(body))
    response = httpx2.Response(
        200,
        headers={"content-type": "text/event-stream"},
        stream=_Chunks(data, size),
        request=request,
    )
    await origins.watch(response)
    passed = b"".join([chunk async for chunk in response.stream])  # type: ignore[union-attr]
    return origins, passed


@pytest.mark.parametrize("size", [1, 2, 7, 4096])
@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
async def test_a_question_on_a_calls_stream_names_that_call(size: int, crlf: bool) -> None:
    big = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"x": "y" * 20_000}}
    ask = {"jsonrpc": "2.0", "id": 3, "method": "elicitation/create", "params": {"message": "?"}}
    sample = {"jsonrpc": "2.0", "id": "s9", "method": "sampling/createMessage", "params": {}}
    data = b"".join(_event(m, crlf) for m in (big, ask, sample))
    origins, passed = await _follow(data, size)
    assert passed == data  # the SDK reads the stream unchanged
    assert origins.call_of(3) == "p-1" and origins.call_of("s9") == "p-1"
    assert origins.call_of(3) is None  # each request is looked up once


async def test_streams_of_other_requests_are_not_followed() -> None:
    ask = {"jsonrpc": "2.0", "id": 3, "method": "elicitation/create", "params": {}}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    origins, _ = await _follow(_event(ask), 64, listing)
    assert origins.call_of(3) is None
