"""A minimal pass-through proxy: the floor any Python proxy on Toolwire's stack can reach.

Same stack as `toolwire serve`: a raw ASGI app under uvicorn (`loop="uvloop"`, one worker)
with the same HTTP protocol (uvicorn's httptools protocol as `proxy/server/http_wire.py`
makes it leaner; `--http httptools`: uvicorn's own), the same upstream client (Toolwire's
own HTTP/1.1 client, `registry/http1/`: one `Pool` with the same keep-alive and
deadlines), orjson. Per request it reads the body, parses it with orjson (any real proxy
looks at `model`/`stream`), forwards the original bytes to the upstream and relays the
answer: an SSE response chunk by chunk as the upstream's reads arrive, anything else as one
body. There is no tool injection, no re-serialisation, no SSE decoding and no re-rendering;
the difference between this and Toolwire is what Toolwire's own work costs.

    python bench/passthrough.py --port 8100 --upstream http://127.0.0.1:8001/v1

With `--inject-tools FILE` (a JSON list of tool schemas, as `toolwire tools --json` prints
them) it is the floor of a tool-injecting proxy instead: the least work Toolwire's job needs
and a pass-through skips. The request gets the tools added and is serialised again; the
answer is parsed to see whether it calls a tool (every event of a stream, whose bytes are
still relayed as they arrive). It runs no tool: the benchmark's answers call none.

With `--client aiohttp` it calls the upstream through aiohttp instead (one `ClientSession`
with `TCPConnector(limit=1000, ttl_dns_cache=300, enable_cleanup_closed=True)`), the
best-known Python client and the reference of the runs before Toolwire had a client of its
own: its counts and timings are comparable with theirs. With the default, the reference
differs from Toolwire only in what Toolwire does, not in the client it calls with.

Its cyclic collector is set as `toolwire serve` sets it (`tune_collector`: a young-generation
pass every 10,000 net allocations, what start-up built frozen out of the passes), so that what
the collector costs at 64 requests in flight is the same on both sides.
"""

from __future__ import annotations

import argparse
import gc
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import orjson
import uvicorn

from proxy.server.http_wire import LeanHttpTools
from registry.http1 import HTTPError, Pool, Response

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_JSON = [(b"content-type", b"application/json")]


class PassThrough:
    """`POST /v1/chat/completions` and `GET /v1/models`, relayed to one upstream."""

    def __init__(
        self, upstream: str, tools: list[Any] | None = None, client: str = "http1"
    ) -> None:
        self._base = upstream.rstrip("/")
        self._tools = tools
        """Schemas to inject; None relays the request as it came."""
        self._chat_url = f"{self._base}/chat/completions"
        self._session: aiohttp.ClientSession | None = None
        self._pool = (
            Pool(limit=1000, connect_timeout_s=10, keepalive_s=4) if client == "http1" else None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        if path == "/v1/chat/completions" and method == "POST":
            await self._chat(scope, receive, send)
        elif path == "/v1/models" and method == "GET":
            await self._relay("GET", f"{self._base}/models", None, send)
        else:
            await _send_whole(send, 404, b'{"error":{"message":"not found"}}', _JSON)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                connector = aiohttp.TCPConnector(
                    limit=1000, ttl_dns_cache=300, enable_cleanup_closed=True
                )
                self._session = aiohttp.ClientSession(
                    connector=connector,
                    timeout=aiohttp.ClientTimeout(total=600, sock_connect=10, sock_read=120),
                    json_serialize=lambda obj: orjson.dumps(obj).decode(),
                )
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._session is not None:
                    await self._session.close()
                if self._pool is not None:
                    await self._pool.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _chat(self, scope: Scope, receive: Receive, send: Send) -> None:
        parts: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            parts.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(parts)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            await _send_whole(send, 400, b'{"error":{"message":"invalid JSON"}}', _JSON)
            return
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            await _send_whole(send, 400, b'{"error":{"message":"model required"}}', _JSON)
            return
        headers = {"Content-Type": "application/json"}
        for name, value in scope["headers"]:
            if name == b"authorization":
                headers["Authorization"] = value.decode("latin-1")
        if self._tools is not None:
            body["tools"] = [*self._tools, *(body.get("tools") or ())]
            raw = orjson.dumps(body)
        await self._relay("POST", self._chat_url, raw, send, headers)

    async def _relay(
        self,
        method: str,
        url: str,
        data: bytes | None,
        send: Send,
        headers: dict[str, str] | None = None,
    ) -> None:
        started = [False]
        try:
            if self._pool is not None:
                resp = await self._pool.request(
                    method.encode(), url, headers or {}, data or b"", idle_s=120, total_s=600
                )
                try:
                    content_type = resp.headers.get("content-type", "application/json")
                    await self._answer(
                        resp.status, content_type, resp.read, _pieces(resp), send, started
                    )
                finally:
                    resp.close()
                return
            assert self._session is not None
            async with self._session.request(method, url, data=data, headers=headers) as answer:
                content_type = answer.headers.get("Content-Type", "application/json")
                pieces = answer.content.iter_any()
                await self._answer(answer.status, content_type, answer.read, pieces, send, started)
        except (aiohttp.ClientError, HTTPError) as exc:
            if started[0]:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            error = orjson.dumps({"error": {"message": f"upstream failed: {exc}"}})
            await _send_whole(send, 502, error, _JSON)

    async def _answer(
        self,
        status: int,
        content_type: str,
        whole: Callable[[], Awaitable[bytes]],
        pieces: AsyncIterator[bytes],
        send: Send,
        started: list[bool],
    ) -> None:
        """Relay an upstream answer: whole, or an event stream piece by piece as it comes
        (`started[0]` set once its head is sent)."""
        if not content_type.startswith("text/event-stream"):
            payload = await whole()
            if self._tools is not None and status == 200:
                _calls_tool(orjson.loads(payload), "message")
            await _send_whole(send, status, payload, [(b"content-type", content_type.encode())])
            return
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", content_type.encode()),
                    (b"cache-control", b"no-cache"),
                ],
            }
        )
        started[0] = True
        events = _Events() if self._tools is not None else None
        async for chunk in pieces:
            if events is not None:
                events.inspect(chunk)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _pieces(response: Response) -> AsyncIterator[bytes]:
    while chunk := await response.read_any():
        yield chunk


class _Events:
    """The events of a relayed stream, parsed as they pass to see any tool call."""

    def __init__(self) -> None:
        self._buffer = b""
        self.calls = 0
        """Events that carried a tool call."""

    def inspect(self, chunk: bytes) -> None:
        *blocks, self._buffer = (self._buffer + chunk).split(b"\n\n")
        for block in blocks:
            if block.startswith(b"data: ") and block != b"data: [DONE]":
                self.calls += _calls_tool(orjson.loads(block[6:]), "delta")


def _calls_tool(payload: Any, key: str) -> bool:
    """Whether an answer (`message`) or a stream chunk (`delta`) calls a tool: what a proxy
    that runs tools must look at in every answer."""
    choices = payload.get("choices") or ()
    return any((choice.get(key) or {}).get("tool_calls") for choice in choices)


async def _send_whole(send: Send, status: int, body: bytes, headers: list[Any]) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    parser = argparse.ArgumentParser(description="Minimal pass-through proxy (benchmark floor).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="base URL, e.g. http://h:p/v1")
    parser.add_argument("--log-level", default="warning")
    parser.add_argument(
        "--inject-tools",
        metavar="FILE",
        help="a JSON list of tool schemas to add to every request (the injecting floor)",
    )
    parser.add_argument(
        "--client",
        choices=("http1", "aiohttp"),
        default="http1",
        help="the upstream client: Toolwire's own HTTP/1.1 client, or aiohttp",
    )
    parser.add_argument(
        "--http",
        choices=("lean", "httptools"),
        default="lean",
        help="the HTTP protocol: toolwire serve's (lean), or uvicorn's own httptools protocol",
    )
    args = parser.parse_args()
    tools = None
    if args.inject_tools:
        with open(args.inject_tools, "rb") as file:
            tools = orjson.loads(file.read())
    gc.freeze()
    gc.set_threshold(10_000, *gc.get_threshold()[1:])  # as proxy.server.serving.tune_collector
    uvicorn.run(
        PassThrough(args.upstream, tools, args.client),
        host=args.host,
        port=args.port,
        http=LeanHttpTools if args.http == "lean" else "httptools",
        loop="uvloop",
        log_level=args.log_level,
    )


if __name__ == "__main__":
    main()
