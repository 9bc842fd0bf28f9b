"""A scripted OpenAI-compatible chat server that behaves like vLLM or Ollama, for tests."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import re
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from aiohttp import web

Style = Literal["vllm", "interleaved", "ollama"]
Kind = Literal["text", "tool_calls", "error", "hang", "stream_then_hang", "drop", "garbage", "func"]
Arguments = dict[str, Any] | str

DEFAULT_MODEL = "fake-model"
# Argument fragment sizes cycle through these, like a tokenizer emitting 3-7 character pieces.
_FRAGMENT_SIZES = (3, 5, 7, 4, 6)
_GARBAGE = b"<html><body>502 Bad Gateway, definitely not JSON</body></html>"
_SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
_DONE = b"data: [DONE]\n\n"


@dataclass(frozen=True)
class Reply:
    """One scripted answer of the fake upstream; build it with the class methods."""

    kind: Kind
    content: str | None = None
    chunks: int | None = None
    calls: tuple[tuple[str, Arguments], ...] = ()
    style: Style = "vllm"
    ids: bool = True
    finish_reason: str = "stop"
    status: int = 200
    error_type: str = "invalid_request_error"
    after_chunks: int = 0
    usage: tuple[int, int] = (10, 5)
    fn: Callable[[dict[str, Any]], Reply] | None = field(default=None, compare=False)

    @classmethod
    def text(
        cls, content: str, *, chunks: int | None = None, usage: tuple[int, int] = (10, 5)
    ) -> Reply:
        """Answer with text; streamed word by word, or in `chunks` near-equal pieces."""
        return cls("text", content=content, chunks=chunks, usage=usage)

    @classmethod
    def tool_calls(
        cls,
        calls: Sequence[tuple[str, Arguments]],
        *,
        style: Style = "vllm",
        content: str | None = None,
        ids: bool = True,
        finish_reason: str | None = None,
        usage: tuple[int, int] = (10, 5),
    ) -> Reply:
        """Answer with tool calls `(name, arguments)`; a str argument is sent verbatim."""
        if finish_reason is None:
            # Ollama reports "stop" even when the message carries tool calls.
            finish_reason = "stop" if style == "ollama" else "tool_calls"
        return cls(
            "tool_calls",
            content=content,
            calls=tuple((name, arguments) for name, arguments in calls),
            style=style,
            ids=ids,
            finish_reason=finish_reason,
            usage=usage,
        )

    @classmethod
    def error(cls, status: int, message: str, *, type: str = "invalid_request_error") -> Reply:
        """Answer with an HTTP error status and an OpenAI error body."""
        return cls("error", content=message, status=status, error_type=type)

    @classmethod
    def hang(cls) -> Reply:
        """Accept the request and never answer, until the client goes away."""
        return cls("hang")

    @classmethod
    def stream_then_hang(cls, content: str = "Thinking about it") -> Reply:
        """Stream a role chunk and `content`, then stall forever."""
        return cls("stream_then_hang", content=content)

    @classmethod
    def drop(cls, after_chunks: int = 2, content: str = "a reply that will never finish") -> Reply:
        """Stream `after_chunks` chunks, then close the connection without [DONE]."""
        return cls("drop", content=content, after_chunks=after_chunks)

    @classmethod
    def garbage(cls) -> Reply:
        """Answer 200 with a body that is not JSON (streamed: data lines that are not JSON)."""
        return cls("garbage")

    @classmethod
    def func(cls, fn: Callable[[dict[str, Any]], Reply]) -> Reply:
        """Choose the reply at request time from the request body."""
        return cls("func", fn=fn)


class FakeUpstream:
    """Scripted OpenAI-compatible chat server."""

    def __init__(
        self,
        default: Reply | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        models: Sequence[str] = (DEFAULT_MODEL,),
    ) -> None:
        self.default: Reply = default or Reply.text("ok")
        self.models = list(models)
        self.requests: list[dict[str, Any]] = []
        # Header names are lower-cased so tests need not guess the client's spelling.
        self.headers: list[dict[str, str]] = []
        # A threading.Event so a test driving the fake from another thread can read it too.
        self.closed = threading.Event()
        self.closed_at: float | None = None
        self.disconnects = 0
        self.base_url = ""
        self._host, self._port = host, port
        self._queue: deque[Reply] = deque()
        self._runner: web.ServerRunner | None = None
        self._stopping: asyncio.Event | None = None
        # Waiters may sit on another thread's loop, so they are woken thread-safely.
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = set()

    def script(self, *replies: Reply) -> None:
        """Queue replies; each chat request takes the next one, then the default."""
        self._queue.extend(replies)

    # The timeout is a parameter, not asyncio.timeout, so a test can simply assert the result.
    async def wait_closed(self, timeout: float = 5.0) -> bool:  # noqa: ASYNC109
        """Wait until a client disconnects mid-reply; False when `timeout` passes first."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        entry = (loop, waiter)
        with self._lock:
            if self.closed.is_set():
                return True
            self._waiters.add(entry)
        try:
            async with asyncio.timeout(timeout):
                await waiter
        except TimeoutError:
            return self.closed.is_set()
        finally:
            with self._lock:
                self._waiters.discard(entry)
        return True

    def reset_closed(self) -> None:
        """Forget earlier disconnects."""
        self.closed.clear()
        self.closed_at = None

    def forget(self) -> None:
        """Forget the requests, the replies still scripted and the disconnects: a fake shared
        by several tests, as each of them finds it."""
        self.requests.clear()
        self.headers.clear()
        self._queue.clear()
        self.disconnects = 0
        self.reset_closed()

    async def start(self) -> None:
        """Listen on the configured host and port (0: an ephemeral port)."""
        self._stopping = asyncio.Event()
        # handler_cancellation makes aiohttp cancel a handler whose client went away.
        server = web.Server(self._handle, handler_cancellation=True, access_log=None)
        self._runner = web.ServerRunner(server, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, self._port))
        await web.SockSite(self._runner, sock, backlog=1024).start()
        host, port = sock.getsockname()[:2]
        self.base_url = f"http://{host}:{port}/v1"

    async def stop(self) -> None:
        """Release hanging replies and close the server."""
        if self._stopping is not None:
            self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeUpstream:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @contextlib.contextmanager
    def serve_in_thread(self) -> Iterator[FakeUpstream]:
        """Run the server on its own event loop in a thread, for synchronous clients."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="fake-upstream", daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result(timeout=10)
            yield self
        finally:
            asyncio.run_coroutine_threadsafe(self.stop(), loop).result(timeout=10)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
            loop.close()

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        reply = self._queue.popleft() if self._queue else self.default
        while reply.fn is not None:
            reply = reply.fn(body)
        return reply

    def _mark_closed(self) -> None:
        with self._lock:
            self.disconnects += 1
            self.closed_at = time.monotonic()
            self.closed.set()
            for loop, waiter in self._waiters:
                loop.call_soon_threadsafe(_resolve, waiter)

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.path in ("/v1/models", "/models"):
            if request.method != "GET":
                return _error_response(405, "method not allowed")
            return _json_response(200, _models_body(self.models))
        if request.path not in ("/v1/chat/completions", "/chat/completions"):
            return _error_response(404, f"no route {request.path}", "not_found_error")
        if request.method != "POST":
            return _error_response(405, "method not allowed")
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            return _error_response(400, "request body is not valid JSON")
        if not isinstance(body, dict):
            return _error_response(400, "request body must be a JSON object")
        self.requests.append(body)
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        reply = self._next_reply(body)
        responder = _Responder(request, reply, body, self._stopping)
        try:
            return await responder.respond()
        except (asyncio.CancelledError, ConnectionResetError):
            # A cancellation we caused by dropping the connection is not a client disconnect.
            if not responder.dropped:
                self._mark_closed()
            raise


class _Responder:
    """Renders one reply to one request, streamed or not."""

    def __init__(
        self,
        request: web.BaseRequest,
        reply: Reply,
        body: dict[str, Any],
        stopping: asyncio.Event | None,
    ) -> None:
        self.request, self.reply, self.stopping = request, reply, stopping
        self.stream = bool(body.get("stream"))
        options = body.get("stream_options") or {}
        self.include_usage = bool(isinstance(options, dict) and options.get("include_usage"))
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.model = str(body.get("model") or DEFAULT_MODEL)
        self.dropped = False

    async def respond(self) -> web.StreamResponse:
        reply = self.reply
        if reply.kind == "error":
            return _error_response(reply.status, reply.content or "", reply.error_type)
        if reply.kind == "hang" or (reply.kind == "stream_then_hang" and not self.stream):
            await self._until_stopped()
            return _error_response(503, "fake upstream is shutting down", "server_error")
        if reply.kind == "drop" and not self.stream:
            return await self._drop()
        if reply.kind == "garbage" and not self.stream:
            return web.Response(body=_GARBAGE, content_type="application/json")
        if not self.stream:
            return _json_response(200, self._completion())
        response = web.StreamResponse(headers=_SSE_HEADERS)
        await response.prepare(self.request)
        if reply.kind == "garbage":
            await response.write(b"data: {not json at all\n\ndata: " + _GARBAGE + b"\n\n" + _DONE)
        elif reply.kind == "stream_then_hang":
            for delta in _role_and_content(reply.content or ""):
                await response.write(self._chunk(delta))
            await self._until_stopped()
        elif reply.kind == "drop":
            chunks = itertools.islice(_role_and_content(reply.content or ""), reply.after_chunks)
            for delta in chunks:
                await response.write(self._chunk(delta))
            return await self._drop()
        else:
            await self._write_stream(response)
        await response.write_eof()
        return response

    async def _write_stream(self, response: web.StreamResponse) -> None:
        reply = self.reply
        deltas = _tool_call_deltas(reply) if reply.kind == "tool_calls" else _text_deltas(reply)
        for delta in deltas:
            await response.write(self._chunk(delta))
        await response.write(self._chunk({}, reply.finish_reason))
        if self.include_usage:
            usage_chunk = self._envelope([]) | {"usage": _usage(reply.usage)}
            await response.write(b"data: " + orjson.dumps(usage_chunk) + b"\n\n")
        await response.write(_DONE)

    async def _until_stopped(self) -> None:
        """Stall until the client goes away (this task is cancelled) or the fake stops."""
        if self.stopping is not None:
            await self.stopping.wait()

    async def _drop(self) -> web.StreamResponse:
        self.dropped = True
        transport = self.request.transport
        if transport is not None:
            transport.abort()
        # aiohttp cancels this handler once it notices the lost connection.
        await asyncio.Future()
        raise AssertionError("unreachable")

    def _envelope(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        chunk = self._envelope([choice])
        if self.include_usage:
            # OpenAI and vLLM send "usage": null on every chunk but the last when usage is asked.
            chunk["usage"] = None
        return b"data: " + orjson.dumps(chunk) + b"\n\n"

    def _completion(self) -> dict[str, Any]:
        reply = self.reply
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.kind == "tool_calls":
            if reply.content is None and reply.style == "ollama":
                message["content"] = ""
            message["tool_calls"] = [
                _call_head(reply, name, arguments, whole=True) for name, arguments in reply.calls
            ]
        choice = {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": reply.finish_reason,
        }
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
            "usage": _usage(reply.usage),
        }


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _role_and_content(content: str, chunks: int | None = None) -> Iterator[dict[str, Any]]:
    yield {"role": "assistant", "content": ""}
    for piece in _split_text(content, chunks):
        yield {"content": piece}


def _text_deltas(reply: Reply) -> Iterator[dict[str, Any]]:
    return _role_and_content(reply.content or "", reply.chunks)


def _tool_call_deltas(reply: Reply) -> Iterator[dict[str, Any]]:
    yield from _role_and_content(reply.content or "")
    if reply.style == "ollama":
        for name, arguments in reply.calls:
            yield {"tool_calls": [_call_head(reply, name, arguments, whole=True)]}
        return
    per_call = [list(_vllm_call_deltas(reply, i, *call)) for i, call in enumerate(reply.calls)]
    if reply.style == "interleaved":
        for round_ in itertools.zip_longest(*per_call):
            yield from (delta for delta in round_ if delta is not None)
    else:
        for deltas in per_call:
            yield from deltas


def _vllm_call_deltas(
    reply: Reply, index: int, name: str, arguments: Arguments
) -> Iterator[dict[str, Any]]:
    head = {"index": index} | _call_head(reply, name, "", whole=False)
    yield {"tool_calls": [head]}
    for piece in _fragments(_arguments_text(arguments)):
        yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}


def _call_head(reply: Reply, name: str, arguments: Arguments, *, whole: bool) -> dict[str, Any]:
    """One tool call object; `whole` means final arguments (object for Ollama, else text)."""
    if whole and reply.style != "ollama":
        arguments = _arguments_text(arguments)
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if reply.ids:
        prefix = "call_" if reply.style == "ollama" else "chatcmpl-tool-"
        call = {"id": f"{prefix}{uuid.uuid4().hex[:24]}"} | call
    return call


def _arguments_text(arguments: Arguments) -> str:
    return arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()


def _fragments(text: str) -> Iterator[str]:
    sizes, start = itertools.cycle(_FRAGMENT_SIZES), 0
    while start < len(text):
        size = next(sizes)
        yield text[start : start + size]
        start += size


def _split_text(content: str, chunks: int | None) -> list[str]:
    if not content:
        return []
    if chunks is None:
        # Split before each word that follows whitespace: "Hello world" -> "Hello ", "world".
        return re.split(r"(?<=\s)(?=\S)", content)
    n = max(1, min(chunks, len(content)))
    return [content[i * len(content) // n : (i + 1) * len(content) // n] for i in range(n)]


def _usage(usage: tuple[int, int]) -> dict[str, int]:
    prompt, completion = usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _models_body(models: Sequence[str]) -> dict[str, Any]:
    created = int(time.time())
    data = [{"id": m, "object": "model", "created": created, "owned_by": "fake"} for m in models]
    return {"object": "list", "data": data}


def _json_response(status: int, body: dict[str, Any]) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


def _error_response(
    status: int, message: str, error_type: str = "invalid_request_error"
) -> web.Response:
    error = {"message": message, "type": error_type, "param": None, "code": None}
    return _json_response(status, {"error": error})


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible chat server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--chunks", type=int, default=None, help="streamed text pieces")
    parser.add_argument(
        "--text",
        default="The quick brown fox jumps over the lazy dog while the proxy keeps up.",
    )
    return parser.parse_args(argv)


async def _serve_forever(args: argparse.Namespace) -> None:
    upstream = FakeUpstream(
        Reply.text(args.text, chunks=args.chunks), host=args.host, port=args.port
    )
    async with upstream:
        print(f"fake upstream serving on {upstream.base_url}", flush=True)
        await asyncio.Event().wait()


def main(argv: Sequence[str] | None = None) -> None:
    """Serve the default reply forever, for benchmarks."""
    args = _parse_args(argv)
    # uvloop is optional: it only makes the fake faster when it serves a benchmark.
    try:
        import uvloop
    except ImportError:
        runner: Callable[..., Any] = asyncio.run
    else:
        runner = uvloop.run
    with contextlib.suppress(KeyboardInterrupt):
        runner(_serve_forever(args))


__all__ = ["DEFAULT_MODEL", "FakeUpstream", "Reply"]

if __name__ == "__main__":
    main()
