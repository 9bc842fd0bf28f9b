"""A stored response is the one its client received, byte for byte (serialized once for both),
relayed or folded from the loop's events, streamed or not; and it stays its key's alone."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import pytest

from proxy.upstreams import openai_chat
from testing.upstream import FakeUpstream, Reply
from tests.e2e.test_front_relay import AUTH, KEY_A, KEY_B, MODEL, proxy


def _completed(stream: bytes) -> tuple[bytes, dict[str, Any]]:
    """The `data:` line of a stream's terminal event, as sent, and its response."""
    for frame in stream.split(b"\n\n"):
        if frame.startswith(b"event: response.completed\n"):
            data = frame.split(b"\ndata: ", 1)[1]
            return data, orjson.loads(data)["response"]
    raise AssertionError(f"no response.completed in {stream!r}")


@pytest.mark.parametrize("relay", [True, False], ids=["relayed", "folded"])
@pytest.mark.parametrize("stream", [False, True], ids=["unstreamed", "streamed"])
async def test_the_stored_response_is_the_one_its_client_received(
    stream: bool, relay: bool, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not relay:
        monkeypatch.setattr(openai_chat, "relayable", lambda payload, model: None)
    upstream.script(Reply.text("Kept, «quoted»\u2028."))
    async with proxy(upstream.base_url, auth=AUTH) as root, aiohttp.ClientSession() as http:
        owner = {"authorization": f"Bearer {KEY_A}"}
        request = {"model": MODEL, "input": "hi", "stream": stream, "metadata": {"k": "v"}}
        async with http.post(f"{root}/v1/responses", json=request, headers=owner) as made:
            assert made.status == 200
            body = await made.read()
        if stream:
            data, received = _completed(body)
            assert data.startswith(b'{"type":"response.completed","sequence_number":')
        else:
            received = orjson.loads(body)
        where = f"{root}/v1/responses/{received['id']}"
        async with http.get(where, headers=owner) as fetched:
            assert fetched.status == 200
            kept = orjson.loads(await fetched.read())
        stranger = {"authorization": f"Bearer {KEY_B}"}
        async with http.get(where, headers=stranger) as hidden:
            assert hidden.status == 404
            assert orjson.loads(await hidden.read())["error"]["type"]
    assert kept == received
    assert received["status"] == "completed" and received["metadata"] == {"k": "v"}
    assert received["output"][0]["content"][0]["text"] == "Kept, «quoted»\u2028."
