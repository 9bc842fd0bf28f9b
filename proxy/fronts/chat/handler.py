"""HTTP endpoints: parse the request, run the loop, render the answer."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson

from registry import SourceSet, ToolRegistry

from .controls import parse_controls
from .errors import BadRequestError, ClientDisconnectedError, ProxyError
from .events import LoopEvent
from .injection import Catalog
from .loop import ToolLoop
from .render import JsonRenderer, ResponseMeta, StreamRenderer
from .responses import (
    Receive,
    Scope,
    Send,
    read_body,
    send_error,
    send_json,
    start_stream,
    until_disconnect,
)
from .router import UpstreamRouter
from .turns import Turn

log = logging.getLogger("toolwire")

_QUEUE_FRAMES = 256
"""Frames rendered ahead of the client; past this the turn waits (backpressure)."""

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


@dataclass(frozen=True, slots=True)
class Services:
    """Everything a request needs, built once at start-up."""

    registry: ToolRegistry
    sources: SourceSet
    catalog: Catalog
    loop: ToolLoop
    upstreams: UpstreamRouter
    max_body_bytes: int


class ChatCompletions:
    """`POST /v1/chat/completions` as a raw ASGI app (so disconnects cancel the work)."""

    def __init__(self, services: Services) -> None:
        self._services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Ids only need to be unique, not secret: the fast generator keeps them cheap.
        request_id = f"req_{random.getrandbits(64):016x}"
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            raw = await read_body(receive, scope, self._services.max_body_bytes)
            turn, stream, include_usage = self._turn(raw, headers, request_id)
        except ClientDisconnectedError:
            return
        except ProxyError as exc:
            await send_error(send, exc, request_id)
            return
        except Exception:
            # The boundary: whatever slipped past validation is still an OpenAI error.
            log.exception("%s request could not be read", request_id)
            await send_error(send, ProxyError("internal error in the proxy"), request_id)
            return
        meta = ResponseMeta(model=turn.body["model"])
        events = self._services.loop.run(turn)
        if stream:
            renderer = StreamRenderer(
                meta, include_usage=include_usage, tool_events=turn.controls.stream_tool_events
            )
            work = _stream(events, renderer, send, request_id)
        else:
            work = _answer(events, JsonRenderer(meta), send, request_id)
        if await until_disconnect(receive, work):
            log.info("%s client disconnected; turn cancelled", request_id)

    def _turn(
        self, raw: bytes, headers: dict[str, str], request_id: str
    ) -> tuple[Turn, bool, bool]:
        body = _parse_body(raw)
        controls = parse_controls(body.pop("toolwire", None), headers)
        upstream = self._services.upstreams.for_model(body["model"])
        catalog = self._services.catalog
        client_tools = catalog.client_tool_names(body.get("tools"))
        toolset = catalog.toolset(controls.tool_filter)
        if toolset.schemas and body.get("n", 1) not in (1, None):
            raise BadRequestError("n > 1 is not supported with proxy tools", param="n")
        stream = body.get("stream") is True
        options = body.get("stream_options") or {}
        include_usage = (
            stream and isinstance(options, dict) and options.get("include_usage") is True
        )
        turn = Turn(body, upstream, toolset, client_tools, controls, headers, request_id)
        return turn, stream, include_usage


async def _answer(
    events: AsyncIterator[LoopEvent], renderer: JsonRenderer, send: Send, request_id: str
) -> None:
    try:
        async for event in events:
            renderer.feed(event)
    except ProxyError as exc:
        await send_error(send, exc, request_id)
        return
    except Exception:
        log.exception("%s turn failed", request_id)
        await send_error(send, ProxyError("internal error in the proxy"), request_id)
        return
    await send_json(send, 200, renderer.body(), {"x-request-id": request_id})


async def _stream(
    events: AsyncIterator[LoopEvent], renderer: StreamRenderer, send: Send, request_id: str
) -> None:
    """Send the turn as SSE; the first item decides the HTTP status.

    A producer task renders events into a queue while this task sends: every frame ready
    when the sender wakes goes out in one write (an upstream read often holds several
    chunks), which halves the cost of streaming under load.
    """
    queue: asyncio.Queue[bytes | ProxyError | None] = asyncio.Queue(maxsize=_QUEUE_FRAMES)
    producer = asyncio.get_running_loop().create_task(_produce(events, renderer, queue, request_id))
    started = False
    try:
        while True:
            batch = [await queue.get()]
            while not queue.empty():
                batch.append(queue.get_nowait())
            frames = [item for item in batch if isinstance(item, bytes)]
            end = batch[-1] if not isinstance(batch[-1], bytes) else False
            if not started:
                if isinstance(end, ProxyError) and not frames:
                    await send_error(send, end, request_id)
                    return
                await start_stream(send, request_id)
                frames.insert(0, renderer.start())
                started = True
            if isinstance(end, ProxyError):
                frames += renderer.error(end)
            body = b"".join(frames)
            await send({"type": "http.response.body", "body": body, "more_body": end is False})
            if end is not False:
                return
    finally:
        producer.cancel()
        await asyncio.gather(producer, return_exceptions=True)


async def _produce(
    events: AsyncIterator[LoopEvent],
    renderer: StreamRenderer,
    queue: asyncio.Queue[bytes | ProxyError | None],
    request_id: str,
) -> None:
    """Render every event into the queue; end with None, or with the error that ended it."""
    try:
        async for event in events:
            for frame in renderer.frames(event):
                await queue.put(frame)
    except ProxyError as exc:
        await queue.put(exc)
    except Exception:
        log.exception("%s turn failed", request_id)
        await queue.put(ProxyError("internal error in the proxy"))
    else:
        await queue.put(None)


def _parse_body(raw: bytes) -> dict[str, Any]:
    """The request body as a dict, checked just enough to route and loop on it.

    Raises:
        BadRequestError: not JSON, or a required field missing or of the wrong type.
    """
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequestError(f"the request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequestError("the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequestError("'model' is required and must be a string", param="model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequestError("'messages' must be a non-empty array", param="messages")
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if not isinstance(role, str) or role not in _ROLES:
            raise BadRequestError(
                "each message must be an object with a valid 'role'", param=f"messages[{i}]"
            )
    if "stream" in body and not isinstance(body["stream"], bool | None):
        raise BadRequestError("'stream' must be a boolean", param="stream")
    return body
