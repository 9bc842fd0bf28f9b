"""The benches' fake upstream: the test suite's `FakeUpstream` answering the default text
(`Reply.text`), on as little CPU as it can take, with the same bytes on the wire.

The fake shares CPU B with the load generator, and when it saturates that core the req/s of
the fastest targets is bounded by the fake, not by the server under test. The test suite's
fake (`testing.upstream`: aiohttp, a dict per request, a uuid, orjson per chunk, a request
log) costs several times what a proxy hop does. This one is an asyncio protocol with no
framework: httptools parses the request (the C parser uvicorn uses), and its answers are
made once a second, not per request:

* The same bytes as `testing.upstream` serving `Reply.text(text, chunks=chunks)`, head and
  body (aiohttp's status line, header order, `Date` and `Server` headers, chunked encoding),
  in the same writes: one for an answer with a length; for a stream, the head, each event
  (its chunk framing with it) and the last chunk apart, as aiohttp writes them, so a proxy
  reads what it read from the test suite's fake. tests/bench/test_fake_upstream.py compares
  the two, byte for byte, over the requests the benches send and others.
* What differs: the answer's `id` and `created`, and the `Date` header, are those of the
  second the answer was made in (the suite's fake makes a new id per request: same length,
  same form), and it keeps no request log. A request it cannot parse gets a bare 400.
* An answer depends on the request's body (stream, `stream_options.include_usage`, the
  model, or the 400 of a body that is not a JSON object), read by the suite's rules: it is
  made at the first request of a second with that body, and taken by the body's bytes for
  the others (the benches send the same body again and again).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import email.utils
import importlib.metadata
import socket
import sys
import time
import uuid
from typing import Any

import httptools
import orjson
import uvloop

from testing.upstream import DEFAULT_MODEL, Reply, _text_deltas, _usage

DEFAULT_TEXT = "The quick brown fox jumps over the lazy dog while the proxy keeps up."
SERVER = f"Python/{sys.version_info[0]}.{sys.version_info[1]} aiohttp/"
SERVER += importlib.metadata.version("aiohttp")
"""aiohttp's `Server` header, which the suite's fake sends."""
CHAT_PATHS = (b"/v1/chat/completions", b"/chat/completions")
MODEL_PATHS = (b"/v1/models", b"/models")
KEPT_ANSWERS = 64
"""Distinct chat answers kept within a second (forgotten all at once past it)."""
_JSON = "application/json"
_SSE = "text/event-stream; charset=utf-8"
_DONE = b"data: [DONE]\n\n"
_PHRASES = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}

Frames = tuple[bytes, ...]
"""An answer as it is written: each item one write."""


class Answers:
    """The answers of the second: made when first asked for, forgotten when it passes."""

    def __init__(self, text: str, chunks: int | None, models: tuple[str, ...]) -> None:
        self.reply = Reply.text(text, chunks=chunks)
        self.models = models
        self.made: dict[tuple[bytes, bool, bool], Frames] = {}
        """This second's answers to chat requests, by (body, HTTP/1.1, keep-alive)."""
        self.second = 0
        self.date = ""
        self.id = ""
        self.tick()

    def tick(self) -> None:
        """A new second: a new `Date`, `created` and id; the answers made again as asked."""
        now = time.time()
        self.second = int(now)
        self.date = email.utils.formatdate(now, usegmt=True)
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.made.clear()

    def chat(self, body: bytes, http11: bool, keep_alive: bool) -> Frames:
        """The frames that answer a chat request with `body`."""
        key = (body, http11, keep_alive)
        frames = self.made.get(key)
        if frames is None:
            if len(self.made) >= KEPT_ANSWERS:
                self.made.clear()
            frames = self.made[key] = self._answer(body, "1.1" if http11 else "1.0", keep_alive)
        return frames

    def _answer(self, raw: bytes, version: str, keep_alive: bool) -> Frames:
        """What the suite's fake answers `raw` (`_handle`, `_Responder`), as its writes."""
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return self.error(400, "request body is not valid JSON", version, keep_alive)
        if not isinstance(body, dict):
            return self.error(400, "request body must be a JSON object", version, keep_alive)
        options = body.get("stream_options") or {}
        usage = bool(isinstance(options, dict) and options.get("include_usage"))
        model = str(body.get("model") or DEFAULT_MODEL)
        envelope: dict[str, Any] = {"id": self.id, "object": "chat.completion"}
        envelope["created"], envelope["model"] = self.second, model
        reply = self.reply
        if not body.get("stream"):
            message = {"role": "assistant", "content": reply.content}
            stop = reply.finish_reason
            choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": stop}
            answer = envelope | {"choices": [choice], "usage": _usage(reply.usage)}
            return (response(200, _JSON, orjson.dumps(answer), self.date, version, keep_alive),)
        envelope["object"] = "chat.completion.chunk"
        events: list[bytes] = []
        deltas: list[tuple[dict[str, Any], str | None]] = [(d, None) for d in _text_deltas(reply)]
        for delta, finish in [*deltas, ({}, reply.finish_reason)]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            chunk = envelope | {"choices": [choice]}
            if usage:
                chunk["usage"] = None
            events.append(b"data: " + orjson.dumps(chunk) + b"\n\n")
        if usage:
            last = envelope | {"choices": [], "usage": _usage(reply.usage)}
            events.append(b"data: " + orjson.dumps(last) + b"\n\n")
        events.append(_DONE)
        return stream_frames(events, self.date, version, keep_alive)

    def model_list(self, version: str, keep_alive: bool) -> Frames:
        data = [
            {"id": m, "object": "model", "created": self.second, "owned_by": "fake"}
            for m in self.models
        ]
        body = orjson.dumps({"object": "list", "data": data})
        return (response(200, _JSON, body, self.date, version, keep_alive),)

    def error(
        self, status: int, message: str, version: str, keep_alive: bool,
        kind: str = "invalid_request_error",
    ) -> Frames:  # fmt: skip
        """The suite's error answer (`_error_response`)."""
        body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        return (response(status, _JSON, orjson.dumps(body), self.date, version, keep_alive),)


def head(status: int, headers: list[tuple[str, str]], version: str, keep_alive: bool) -> bytes:
    """aiohttp's head: the status line, the headers in its order, `Connection` as it adds it."""
    lines = [f"HTTP/{version} {status} {_PHRASES[status]}"]
    lines += [f"{name}: {value}" for name, value in headers]
    if keep_alive and version == "1.0":
        lines.append("Connection: keep-alive")
    elif not keep_alive and version == "1.1":
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def response(
    status: int, content_type: str, body: bytes, date: str, version: str = "1.1",
    keep_alive: bool = True,
) -> bytes:  # fmt: skip
    """An answer with a length (`web.Response`), head and body in one write."""
    headers = [("Content-Type", content_type), ("Content-Length", str(len(body)))]
    headers += [("Date", date), ("Server", SERVER)]
    return head(status, headers, version, keep_alive) + body


def stream_frames(events: list[bytes], date: str, version: str, keep_alive: bool) -> Frames:
    """A stream (`web.StreamResponse`): its head, each event in its chunk, the last chunk."""
    headers = [("Content-Type", _SSE), ("Cache-Control", "no-cache")]
    if version == "1.1":
        headers.append(("Transfer-Encoding", "chunked"))
        framed = [b"%x\r\n%b\r\n" % (len(event), event) for event in events]
        return (head(200, [*headers, ("Date", date), ("Server", SERVER)], version, keep_alive),
                *framed, b"0\r\n\r\n")  # fmt: skip
    # HTTP/1.0: no chunks, and the end of the stream is the connection's.
    return (head(200, [*headers, ("Date", date), ("Server", SERVER)], version, False), *events)


class Connection(asyncio.Protocol):
    """One client connection: requests parsed as they come, each answered when complete."""

    def __init__(self, answers: Answers) -> None:
        self.answers = answers
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.body = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            transport = self.transport
            assert transport is not None
            transport.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            transport.close()

    # The parser's callbacks: only these three, so it calls nothing per header.
    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        parser, answers = self.parser, self.answers
        url, body = self.url, self.body
        self.url = self.body = b""
        keep_alive = parser.should_keep_alive()
        http11 = parser.get_http_version() == "1.1"
        method = parser.get_method()
        path = url if url in CHAT_PATHS else url.partition(b"?")[0]
        frames: Frames
        if path in CHAT_PATHS and method == b"POST":
            frames = answers.chat(body, http11, keep_alive)
        else:
            frames = self._other(path, method, "1.1" if http11 else "1.0", keep_alive)
        transport = self.transport
        assert transport is not None
        write = transport.write
        for frame in frames:
            write(frame)
        if not keep_alive or (not http11 and len(frames) > 1):
            transport.close()

    def _other(self, path: bytes, method: bytes, version: str, keep_alive: bool) -> Frames:
        answers = self.answers
        if path in MODEL_PATHS:
            if method == b"GET":
                return answers.model_list(version, keep_alive)
            return answers.error(405, "method not allowed", version, keep_alive)
        if path in CHAT_PATHS:
            return answers.error(405, "method not allowed", version, keep_alive)
        route = path.decode("latin-1")
        return answers.error(404, f"no route {route}", version, keep_alive, "not_found_error")


async def start(
    host: str, port: int, chunks: int | None, text: str = DEFAULT_TEXT
) -> tuple[asyncio.Server, str]:
    """Listen on `host`:`port` (0: an ephemeral port): the server and its base URL."""
    loop = asyncio.get_running_loop()
    answers = Answers(text, chunks, (DEFAULT_MODEL,))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    server = await loop.create_server(lambda: Connection(answers), sock=sock, backlog=1024)

    def tick() -> None:  # at each whole second, while the server serves
        if server.is_serving():
            answers.tick()
            loop.call_at(loop.time() + answers.second + 1 - time.time(), tick)

    loop.call_at(loop.time() + answers.second + 1 - time.time(), tick)
    bound_host, bound_port = sock.getsockname()[:2]
    return server, f"http://{bound_host}:{bound_port}/v1"


async def _serve(host: str, port: int, chunks: int | None, text: str) -> None:
    server, base_url = await start(host, port, chunks, text)
    async with server:
        print(f"fake upstream serving on {base_url}", flush=True)
        await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=None)
    parser.add_argument("--text", default=DEFAULT_TEXT)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        uvloop.run(_serve(args.host, args.port, args.chunks, args.text))


if __name__ == "__main__":
    main()
