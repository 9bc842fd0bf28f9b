"""A fake model server with no tool parser: the model's raw text comes back as content.

It behaves like vLLM or SGLang serving a model without `--tool-call-parser`: a request whose
`tools` would need parsing (any `tool_choice` but "none") is refused with vLLM's 400, while
`tool_choice: "none"` is accepted (the chat template still sees the tools); special tokens are
removed from the text unless the request says `skip_special_tokens: false`, as the servers'
detokenizers do; a streamed answer is cut into seeded random pieces of one to four
characters, so markers are split at awkward places.
"""

from __future__ import annotations

import random
import socket
import time
import uuid
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

REJECTION = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
_SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}


@dataclass(frozen=True)
class Turn:
    """One scripted model output and why it stopped."""

    text: str
    finish_reason: str = "stop"


class RawServer:
    """Answers each chat request with the next scripted raw text (then the last one again)."""

    def __init__(self, *, special_tokens: Sequence[str] = (), seed: int = 0) -> None:
        """`special_tokens` (settable later): the family's marker tokens, removed from the
        text unless the request keeps them."""
        self.base_url = ""
        self._seed = seed
        self._runner: web.ServerRunner | None = None
        self.reset(special_tokens)

    def reset(self, special_tokens: Sequence[str] = ()) -> None:
        """Forget the requests and the script, as a new server would (its streamed pieces are
        cut the same way again): one server can serve a module's tests one after another."""
        self.requests: list[dict[str, Any]] = []
        self.special_tokens = tuple(special_tokens)
        self._turns: deque[Turn] = deque()
        self._last = Turn("(nothing scripted)")
        self._rng = random.Random(self._seed)

    def script(self, *turns: str | Turn) -> None:
        """Queue model outputs, one per request."""
        self._turns.extend(t if isinstance(t, Turn) else Turn(t) for t in turns)

    async def __aenter__(self) -> RawServer:
        server = web.Server(self._handle, handler_cancellation=True, access_log=None)
        self._runner = web.ServerRunner(server, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        await web.SockSite(self._runner, sock).start()
        host, port = sock.getsockname()[:2]
        self.base_url = f"http://{host}:{port}/v1"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.path.endswith("/models"):
            return web.json_response({"object": "list", "data": [{"id": "raw-model"}]})
        if not request.path.endswith("/chat/completions") or request.method != "POST":
            return _error(404, f"no route {request.method} {request.path}")
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            return _error(400, "request body is not valid JSON")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object")
        self.requests.append(body)
        if body.get("tools") and body.get("tool_choice", "auto") != "none":
            return _error(400, REJECTION)
        turn = self._turns.popleft() if self._turns else self._last
        self._last = turn
        text = turn.text
        if body.get("skip_special_tokens", True) is not False:
            for token in self.special_tokens:
                text = text.replace(token, "")
        reply = _Reply(str(body.get("model") or "raw-model"), text, turn.finish_reason)
        if not body.get("stream"):
            return web.json_response(reply.completion(), dumps=_dumps)
        response = web.StreamResponse(headers=_SSE_HEADERS)
        await response.prepare(request)
        for chunk in reply.chunks(self._pieces(text)):
            await response.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
        options = body.get("stream_options") or {}
        if isinstance(options, dict) and options.get("include_usage"):
            usage = reply.envelope([]) | {"usage": reply.usage()}
            await response.write(b"data: " + orjson.dumps(usage) + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    def _pieces(self, text: str) -> list[str]:
        pieces, i = [], 0
        while i < len(text):
            size = self._rng.randint(1, 4)
            pieces.append(text[i : i + size])
            i += size
        return pieces


class _Reply:
    """One answer rendered as a completion or as chunks."""

    def __init__(self, model: str, text: str, finish_reason: str) -> None:
        self.model, self.text, self.finish_reason = model, text, finish_reason
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())

    def envelope(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self.id,
            "created": self.created,
            "model": self.model,
            "object": "chat.completion.chunk",
            "choices": choices,
        }

    def usage(self) -> dict[str, int]:
        return {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}

    def completion(self) -> dict[str, Any]:
        message = {"role": "assistant", "content": self.text}
        choice = {"index": 0, "message": message, "finish_reason": self.finish_reason}
        return {
            "id": self.id,
            "created": self.created,
            "model": self.model,
            "object": "chat.completion",
            "choices": [choice],
            "usage": self.usage(),
        }

    def chunks(self, pieces: list[str]) -> Iterator[dict[str, Any]]:
        role = {"role": "assistant", "content": ""}
        yield self.envelope([{"index": 0, "delta": role, "finish_reason": None}])
        for piece in pieces:
            delta = {"content": piece}
            yield self.envelope([{"index": 0, "delta": delta, "finish_reason": None}])
        done = {"index": 0, "delta": {}, "finish_reason": self.finish_reason}
        yield self.envelope([done])


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _error(status: int, message: str) -> web.Response:
    body = {"error": {"message": message, "type": "BadRequestError", "param": None, "code": status}}
    return web.json_response(body, status=status, dumps=_dumps)
