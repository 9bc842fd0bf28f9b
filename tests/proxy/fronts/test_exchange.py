"""One turn served over HTTP (`serve_reply`): a request that cannot be read or prepared (at
once, or after a wait) is answered in the front's shape, whatever it raised; an answer relayed
as the upstream's bytes makes no renderer, and one that is not is rendered."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from proxy.errors import BadRequestError, ProxyError
from proxy.fronts.exchange import Relay, Reply, serve_reply
from proxy.server.asgi import send_json_bytes
from proxy.server.context import RequestContext

SERVICES: Any = SimpleNamespace(
    server=SimpleNamespace(max_body_bytes=1 << 20, body_timeout_s=5.0), keepalive_s=5.0
)


def shape(exc: ProxyError) -> dict[str, Any]:
    return {"front": exc.message}


async def served(serve: Any, *args: Any) -> tuple[int, dict[str, str], bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "headers": [], "path": "/"}
    await serve(scope, receive, send, SERVICES, *args, shape)
    start, body = sent
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], headers, body["body"]


class _Renderer:
    def __init__(self) -> None:
        self.fed: list[Any] = []

    def feed(self, event: Any) -> None:
        self.fed.append(event)

    def encoded(self) -> bytes:
        return orjson.dumps({"rendered": self.fed})


@pytest.mark.parametrize("raised", [BadRequestError("bad field"), RuntimeError("a bug")])
async def test_what_a_reply_raises_is_answered_in_the_fronts_shape(
    raised: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    def reply(raw: bytes, context: RequestContext) -> Reply:
        raise raised

    async def waited(raw: bytes, context: RequestContext) -> Reply:
        raise raised

    for made in (reply, waited):
        with caplog.at_level(logging.ERROR, logger="toolwire"):
            status, headers, body = await served(serve_reply, made)
        internal = isinstance(raised, RuntimeError)
        message = "internal error in the proxy" if internal else "bad field"
        assert (status, orjson.loads(body)) == (500 if internal else 400, {"front": message})
        assert "x-request-id" in headers
        assert ("could not be read" in caplog.text) is internal
        caplog.clear()


@pytest.mark.parametrize("relayed", [True, False])
async def test_a_relay_makes_its_renderer_only_for_events(relayed: bool) -> None:
    made: list[tuple[_Renderer, str]] = []

    def renderer(meta: str) -> _Renderer:
        made.append((_Renderer(), meta))
        return made[-1][0]

    async def events() -> AsyncIterator[str]:
        yield "one"
        yield "two"

    async def answer() -> bytes | AsyncIterator[str]:
        return b'{"upstream":true}' if relayed else events()

    def reply(raw: bytes, context: RequestContext) -> Reply:
        return Relay(answer(), renderer, "the model")

    status, _, body = await served(serve_reply, reply)
    assert status == 200
    if relayed:
        assert (body, made) == (b'{"upstream":true}', [])
    else:
        assert orjson.loads(body) == {"rendered": ["one", "two"]}
        assert [meta for _, meta in made] == ["the model"]


async def test_a_reply_given_after_a_wait_is_served() -> None:
    async def answer() -> bytes:
        return b'{"after":"a wait"}'

    async def waited(raw: bytes, context: RequestContext) -> Reply:
        return Relay(answer(), _Renderer, None)

    assert (await served(serve_reply, waited))[::2] == (200, b'{"after":"a wait"}')


async def test_an_answer_is_sent_as_send_json_bytes_sends_it() -> None:
    # The whole answer's two messages are written out in `serve_reply`: the same as the
    # shared helper's, headers and their order included.
    async def answer() -> bytes:
        return b'{"answer":"\xc3\xa9"}'

    def reply(raw: bytes, context: RequestContext) -> Reply:
        context.request_id = "req_1"
        return Relay(answer(), _Renderer, None)

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    await serve_reply({"type": "http", "headers": []}, receive, send, SERVICES, reply, shape)
    helper: list[dict[str, Any]] = []

    async def kept(message: dict[str, Any]) -> None:
        helper.append(message)

    await send_json_bytes(kept, 200, b'{"answer":"\xc3\xa9"}', {"x-request-id": "req_1"})
    assert sent == helper
