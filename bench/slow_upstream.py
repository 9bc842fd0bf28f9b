"""A slow OpenAI-compatible model for `bench/streams.py`: streams that stay open for seconds.

A streamed chat request gets a role chunk at once, then `--chunks` content chunks, one every
`--interval` seconds, a finish chunk and `[DONE]`: with the defaults (100 chunks, 0.1 s) each
stream stays open 10 s. An unstreamed request is answered at once with the whole text, so the
same server also measures plain req/s. Every chunk is built once at start-up; per stream
only the waiting costs anything, so one process holds thousands of open streams.

    python bench/slow_upstream.py --port PORT [--chunks 100] [--interval 0.1]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket

import orjson
import uvloop
from aiohttp import web

PIECE = "tok "
TEXT = "The quick brown fox jumps over the lazy dog while the proxy keeps up."
"""The unstreamed answer (the text `bench/overhead.py`'s wrk script checks)."""


def _chunk(delta: dict[str, str], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    body = {
        "id": "chatcmpl-slow",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fake-model",
        "choices": [choice],
    }
    return b"data: " + orjson.dumps(body) + b"\n\n"


class SlowModel:
    """The handlers, with every byte they send built once."""

    def __init__(self, chunks: int, interval: float) -> None:
        self.chunks, self.interval = chunks, interval
        self.first = _chunk({"role": "assistant", "content": ""})
        self.piece = _chunk({"content": PIECE})
        self.last = _chunk({}, "stop") + b"data: [DONE]\n\n"
        message = {"role": "assistant", "content": TEXT}
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
        self.whole = orjson.dumps(
            {
                "id": "chatcmpl-slow",
                "object": "chat.completion",
                "created": 0,
                "model": "fake-model",
                "choices": [choice],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )
        self.models = orjson.dumps(
            {"object": "list", "data": [{"id": "fake-model", "object": "model", "created": 0}]}
        )

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = orjson.loads(await request.read())
        if not body.get("stream"):
            return web.Response(body=self.whole, content_type="application/json")
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        await response.write(self.first)
        for _ in range(self.chunks):
            await asyncio.sleep(self.interval)
            await response.write(self.piece)
        await response.write(self.last)
        await response.write_eof()
        return response

    async def list_models(self, request: web.Request) -> web.Response:
        return web.Response(body=self.models, content_type="application/json")


async def _serve(port: int, chunks: int, interval: float) -> None:
    model = SlowModel(chunks, interval)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", model.chat)
    app.router.add_get("/v1/models", model.list_models)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    await web.SockSite(runner, sock, backlog=4096).start()
    print(f"slow upstream serving on http://127.0.0.1:{port}/v1", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=100, help="content chunks per stream")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between chunks")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        uvloop.run(_serve(args.port, args.chunks, args.interval))


if __name__ == "__main__":
    main()
