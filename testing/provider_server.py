"""What the fake Anthropic, Gemini and Responses servers share: a scripted reply, and an
aiohttp server on an ephemeral loopback port that records every request."""

from __future__ import annotations

import asyncio
import socket
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from aiohttp import web

Kind = Literal["answer", "error", "stream_error", "blocked", "hang"]


@dataclass(frozen=True)
class Call:
    """One tool call of a scripted answer; `id` None lets the fake pick (or omit) one."""

    name: str
    arguments: dict[str, Any]
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """One scripted answer of a provider fake; build it with the class methods."""

    kind: Kind = "answer"
    text: str = ""
    calls: tuple[Call, ...] = ()
    thinking: str | None = None
    """Thinking text (Anthropic thinking block, Gemini thought part, Responses reasoning)."""
    signature: str | None = None
    """The thinking's signature (Anthropic), thoughtSignature (Gemini), encrypted_content
    (Responses)."""
    ids: bool = True
    """Gemini only: function calls carry ids."""
    status: int = 200
    error_type: str = "invalid_request_error"
    retry_after: str | None = None
    usage: tuple[int, int] = (10, 5)
    fn: Callable[[dict[str, Any]], Reply] | None = field(default=None, compare=False)

    @classmethod
    def answer(
        cls,
        text: str = "",
        *,
        calls: Sequence[tuple[str, dict[str, Any]] | Call] = (),
        thinking: str | None = None,
        signature: str | None = None,
        ids: bool = True,
        usage: tuple[int, int] = (10, 5),
    ) -> Reply:
        """Text and/or tool calls `(name, arguments)`, optionally after thinking."""
        made = tuple(c if isinstance(c, Call) else Call(c[0], c[1]) for c in calls)
        return cls(
            "answer",
            text=text,
            calls=made,
            thinking=thinking,
            signature=signature,
            ids=ids,
            usage=usage,
        )

    @classmethod
    def error(
        cls,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        retry_after: str | None = None,
    ) -> Reply:
        """An HTTP error status with the provider's error body."""
        return cls("error", text=message, status=status, error_type=type, retry_after=retry_after)

    @classmethod
    def stream_error(cls, message: str, *, type: str = "overloaded_error") -> Reply:
        """A 200 whose stream starts, then reports an error (unstreamed: the error status)."""
        return cls("stream_error", text=message, error_type=type, status=529)

    @classmethod
    def blocked(cls) -> Reply:
        """A safety block or refusal: the turn ends with no content."""
        return cls("blocked")

    @classmethod
    def hang(cls) -> Reply:
        """Never answer, until the client goes away."""
        return cls("hang")

    @classmethod
    def func(cls, fn: Callable[[dict[str, Any]], Reply]) -> Reply:
        """Choose the reply at request time from the request body."""
        return cls(fn=fn)


class Rejected(Exception):
    """The request breaks a rule the real service enforces: a 400 with this message."""


class ProviderFake:
    """Base of the provider fakes: scripting, request log, server lifecycle."""

    api_key = "fake-provider-key"

    def __init__(self, default: Reply | None = None, *, models: Sequence[str] = ()) -> None:
        self.default = default or Reply.answer("ok")
        self.models = list(models)
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.base_url = ""
        self._queue: deque[Reply] = deque()
        self._runner: web.ServerRunner | None = None
        self._stopping = asyncio.Event()

    def script(self, *replies: Reply) -> None:
        """Queue replies; each request takes the next one, then the default."""
        self._queue.extend(replies)

    def next_reply(self, body: dict[str, Any]) -> Reply:
        reply = self._queue.popleft() if self._queue else self.default
        while reply.fn is not None:
            reply = reply.fn(body)
        return reply

    async def start(self) -> None:
        server = web.Server(self._handle, handler_cancellation=True, access_log=None)
        self._runner = web.ServerRunner(server, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        await web.SockSite(self._runner, sock).start()
        host, port = sock.getsockname()[:2]
        self.base_url = self.url_of(f"http://{host}:{port}")

    def url_of(self, root: str) -> str:
        """The base_url a client configures for this fake, from the server's root."""
        return root

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ProviderFake:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def until_stopped(self) -> None:
        await self._stopping.wait()

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        body: Any = None
        if request.method == "POST":
            try:
                body = orjson.loads(await request.read())
            except orjson.JSONDecodeError:
                return self.error_response(400, "body is not JSON", "invalid_request_error")
            self.requests.append(body)
            self.paths.append(request.path_qs)
            self.headers.append({k.lower(): v for k, v in request.headers.items()})
        try:
            return await self.route(request, body)
        except Rejected as exc:
            return self.error_response(400, str(exc), "invalid_request_error")

    async def route(self, request: web.BaseRequest, body: Any) -> web.StreamResponse:
        raise NotImplementedError

    def error_response(
        self, status: int, message: str, kind: str, retry_after: str | None = None
    ) -> web.Response:
        raise NotImplementedError


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status, body=orjson.dumps(body), content_type="application/json", headers=headers
    )


def split(text: str, size: int = 4) -> list[str]:
    """`text` in pieces of `size` characters, as a tokenizer would stream it."""
    return [text[i : i + size] for i in range(0, len(text), size)] if text else []


def require(condition: bool, message: str) -> None:
    """Reject the request like the real service when `condition` is false."""
    if not condition:
        raise Rejected(message)


__all__ = ["Call", "ProviderFake", "Rejected", "Reply", "json_response", "require", "split"]
