"""The soak's requests: a fixed mix of kinds, each sent and its answer checked as a user would.

Each kind has a weight (requests per cycle of the shuffled schedule); a request whose answer
is not what a user expects raises `Failure` with what was wrong.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import orjson

from qa.soak_server import TEXT, TOOL_ANSWER_PREFIX

MODEL = "fake-model"
TOOL_TEXT = TOOL_ANSWER_PREFIX + "5.0"
"""What the tool rounds must answer: the fake quotes `calculate("2 + 3")`'s result."""
UPSTREAM_TIMEOUT_S = 2.0
STALL_DEADLINE_S = UPSTREAM_TIMEOUT_S + 5.0
REQUEST_TIMEOUT_S = 30.0
WEIGHTS = {
    "chat.stream": 32,
    "chat.json": 24,
    "chat.tool": 24,
    "resp.tool": 24,
    "resp.json": 20,
    "upstream500": 8,
    "stall": 1,
    "leave": 8,
    "malformed": 8,
}
"""Requests of each kind per cycle. A stall holds its worker for the whole idle timeout, far
longer than any other request, so stalls are rare: more of them would tie up most workers."""


class Failure(Exception):
    """A response that is not what a user expects."""


def _chat(text: str, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": text}]}
    if stream:
        body["stream"] = True
    return body


def _responses(text: str, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "input": text}
    if stream:
        body["stream"] = True
    return body


def _frames(raw: bytes) -> list[tuple[str | None, bytes]]:
    """SSE frames as (event name, data); comments and empty frames are left out."""
    frames = []
    for block in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
        event, data = None, []
        for line in block.split(b"\n"):
            if line.startswith(b"event:"):
                event = line[6:].strip().decode()
            elif line.startswith(b"data:"):
                data.append(line[5:].removeprefix(b" "))
        if data:
            frames.append((event, b"\n".join(data)))
    return frames


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise Failure(message)


def _excerpt(raw: bytes, size: int = 300) -> str:
    text = raw.decode(errors="replace")
    return text if len(text) <= size else text[: size // 2] + " ... " + text[-size // 2 :]


def _check_chat_stream(raw: bytes, expected: str) -> None:
    frames = _frames(raw)
    _expect(bool(frames) and frames[-1][1] == b"[DONE]", f"no [DONE] at the end: {_excerpt(raw)}")
    chunks = [orjson.loads(data) for _, data in frames[:-1]]
    errors = [c["error"] for c in chunks if "error" in c]
    _expect(not errors, f"error frame: {errors[:1]}")
    text = "".join(
        choice["delta"].get("content") or ""
        for c in chunks
        for choice in c.get("choices", [])
        if "delta" in choice
    )
    _expect(text == expected, f"streamed text {text!r}, expected {expected!r}")
    finish = [ch.get("finish_reason") for c in chunks for ch in c.get("choices", [])]
    _expect("stop" in finish, f"no finish_reason stop: {finish}")


def _check_chat_json(body: dict[str, Any], expected: str) -> None:
    choice = body["choices"][0]
    content = choice["message"]["content"]
    _expect(content == expected, f"content {content!r}, expected {expected!r}")
    _expect(choice["finish_reason"] == "stop", f"finish_reason {choice['finish_reason']!r}")


def _output_text(response: dict[str, Any]) -> str:
    return "".join(
        part.get("text", "")
        for item in response.get("output", [])
        if item.get("type") == "message"
        for part in item.get("content", [])
        if part.get("type") == "output_text"
    )


def _check_responses_stream(raw: bytes, expected: str) -> None:
    frames = _frames(raw)
    _expect(bool(frames), f"empty stream: {_excerpt(raw)}")
    last_event, last_data = frames[-1]
    _expect(last_event == "response.completed", f"last event {last_event}: {_excerpt(last_data)}")
    events = [orjson.loads(data) for _, data in frames]
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    response = events[-1]["response"]
    final = _output_text(response)
    _expect(deltas == expected, f"deltas {deltas!r}, expected {expected!r}")
    _expect(final == expected, f"completed output {final!r}, expected {expected!r}")
    _expect(response["status"] == "completed", f"status {response['status']!r}")


def _check_responses_json(body: dict[str, Any], expected: str) -> None:
    _expect(body.get("status") == "completed", f"status {body.get('status')!r}")
    text = _output_text(body)
    _expect(text == expected, f"output {text!r}, expected {expected!r}")


def _check_error_body(raw: bytes, status: int, expected: int) -> dict[str, Any]:
    _expect(status == expected, f"status {status}, expected {expected}: {_excerpt(raw)}")
    try:
        error = orjson.loads(raw)["error"]
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise Failure(f"not an OpenAI error body: {_excerpt(raw)}") from exc
    _expect(isinstance(error.get("message"), str), f"error without a message: {error}")
    return error  # type: ignore[no-any-return]


MALFORMED: tuple[tuple[str, bytes], ...] = (
    ("/v1/chat/completions", b'{"model": "fake-model", "messages": ['),
    ("/v1/chat/completions", b'{"model": "fake-model"}'),
    ("/v1/responses", b'{"model": "fake-model", "input": '),
    ("/v1/chat/completions", b'{"model": "fake-model", "messages": "hello"}'),
    ("/v1/responses", b'{"model": "fake-model", "input": "hi", "stream": "often"}'),
)


class Client:
    """Sends one request of a kind and checks the answer; raises Failure."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = base
        self._turn = itertools.count()

    async def run(self, kind: str) -> None:
        n = next(self._turn)
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                await getattr(self, "_" + kind.replace(".", "_"))(n)
        except TimeoutError as exc:
            raise Failure(f"no complete answer within {REQUEST_TIMEOUT_S:.0f} s") from exc
        except (aiohttp.ClientError, ValueError, LookupError, TypeError, AttributeError) as exc:
            # An answer of the wrong shape (JSON decode errors are ValueErrors) is a failure too.
            raise Failure(f"{type(exc).__name__}: {exc}") from exc

    async def _post(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        async with self.session.post(self.base + path, data=orjson.dumps(body)) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), await resp.read()

    async def _ok(self, path: str, body: dict[str, Any]) -> bytes:
        status, content_type, raw = await self._post(path, body)
        _expect(status == 200, f"status {status}: {_excerpt(raw)}")
        wanted = "text/event-stream" if body.get("stream") else "application/json"
        _expect(content_type.startswith(wanted), f"content type {content_type!r}")
        return raw

    async def _chat_stream(self, n: int) -> None:
        _check_chat_stream(await self._ok("/v1/chat/completions", _chat("hello", True)), TEXT)

    async def _chat_json(self, n: int) -> None:
        raw = await self._ok("/v1/chat/completions", _chat("hello", False))
        _check_chat_json(orjson.loads(raw), TEXT)

    async def _chat_tool(self, n: int) -> None:
        raw = await self._ok("/v1/chat/completions", _chat("use a tool please", True))
        _check_chat_stream(raw, TOOL_TEXT)

    async def _resp_tool(self, n: int) -> None:
        raw = await self._ok("/v1/responses", _responses("use a tool please", True))
        _check_responses_stream(raw, TOOL_TEXT)

    async def _resp_json(self, n: int) -> None:
        raw = await self._ok("/v1/responses", _responses("hello", False))
        _check_responses_json(orjson.loads(raw), TEXT)

    async def _upstream500(self, n: int) -> None:
        path, make = [
            ("/v1/chat/completions", _chat),
            ("/v1/responses", _responses),
        ][n % 2]
        status, _, raw = await self._post(path, make("fail please", n % 4 >= 2))
        error = _check_error_body(raw, status, 502)
        _expect("500" in error["message"], f"the error does not name the 500: {error}")

    async def _stall(self, n: int) -> None:
        chat = n % 2 == 0
        path, body = (
            ("/v1/chat/completions", _chat("stall please", True))
            if chat
            else ("/v1/responses", _responses("stall please", True))
        )
        started = time.monotonic()
        try:
            async with asyncio.timeout(STALL_DEADLINE_S):
                raw = await self._ok(path, body)
        except TimeoutError as exc:
            raise Failure(f"stalled stream still open after {STALL_DEADLINE_S:.0f} s") from exc
        took = time.monotonic() - started
        frames = _frames(raw)
        if chat:
            _expect(len(frames) >= 2 and frames[-1][1] == b"[DONE]", f"no [DONE]: {_excerpt(raw)}")
            last = orjson.loads(frames[-2][1])
            _expect("error" in last, f"no error frame before [DONE]: {_excerpt(raw)}")
        else:
            event, data = frames[-1] if frames else (None, b"")
            _expect(event == "response.failed", f"last event {event}: {_excerpt(data)}")
            error = orjson.loads(data)["response"].get("error")
            _expect(bool(error), f"response.failed without an error: {_excerpt(data)}")
        _expect(took >= UPSTREAM_TIMEOUT_S * 0.9, f"the stall ended after only {took:.2f} s")

    async def _leave(self, n: int) -> None:
        path, body = (
            ("/v1/chat/completions", _chat("leave early", True))
            if n % 2 == 0
            else ("/v1/responses", _responses("leave early", True))
        )
        async with self.session.post(self.base + path, data=orjson.dumps(body)) as resp:
            _expect(resp.status == 200, f"status {resp.status}")
            seen = b""
            async with asyncio.timeout(STALL_DEADLINE_S):
                while b"Thinking" not in seen:
                    chunk = await resp.content.readany()
                    _expect(bool(chunk), f"stream ended before the first words: {_excerpt(seen)}")
                    seen += chunk
            # Closes the connection: the server sees its client go away mid-stream.
            resp.close()

    async def _malformed(self, n: int) -> None:
        path, data = MALFORMED[n % len(MALFORMED)]
        async with self.session.post(self.base + path, data=data) as resp:
            status, raw = resp.status, await resp.read()
        error = _check_error_body(raw, status, 400)
        _expect(error.get("type") == "invalid_request_error", f"error type: {error}")


def schedule(seed: int = 7) -> Iterator[str]:
    kinds = [kind for kind, weight in WEIGHTS.items() for _ in range(weight)]
    random.Random(seed).shuffle(kinds)
    return itertools.cycle(kinds)
