"""`POST /v1/chat/completions`: parse the body into a turn, run the loop, render Chat."""

from __future__ import annotations

import logging
from typing import Any

from ...errors import BadRequestError, ClientDisconnectedError, ProxyError
from ...server.asgi import Receive, Scope, Send, read_body, until_disconnect
from ...server.context import RequestContext, context_of
from ...server.services import Services
from ...turn.controls import parse_controls
from ...turn.record import Turn
from .. import exchange
from .render import JsonRenderer, ResponseMeta, StreamRenderer
from .request import parse_body

log = logging.getLogger("toolwire")


def error_body(exc: ProxyError) -> dict[str, Any]:
    """OpenAI's error shape."""
    return exc.body()


class ChatCompletions:
    """The Chat Completions front as a raw ASGI app (so disconnects cancel the work)."""

    def __init__(self, services: Services) -> None:
        self._services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        context = context_of(scope)
        try:
            raw = await read_body(receive, scope, self._services.server)
            turn, stream, include_usage = self._turn(raw, context)
        except ClientDisconnectedError:
            return
        except ProxyError as exc:
            await exchange.send_error(send, exc, context, error_body)
            return
        except Exception:
            # The boundary: whatever slipped past validation is still an OpenAI error.
            log.exception("%s request could not be read", context.request_id)
            await exchange.send_error(send, exchange.internal_error(), context, error_body)
            return
        meta = ResponseMeta.new(turn.body["model"])
        events = self._services.loop.run(turn)
        if stream:
            renderer = StreamRenderer(
                meta, include_usage=include_usage, tool_events=turn.controls.stream_tool_events
            )
            work = exchange.stream(
                events, renderer, send, context, error_body, self._services.keepalive_s
            )
        else:
            work = exchange.answer(events, JsonRenderer(meta), send, context, error_body)
        if await until_disconnect(receive, work):
            log.info("%s client disconnected; turn cancelled", context.request_id)

    def _turn(self, raw: bytes, context: RequestContext) -> tuple[Turn, bool, bool]:
        body = parse_body(raw)
        controls = parse_controls(body.pop("toolwire", None), context.headers)
        upstream = self._services.upstreams.for_model(body["model"])
        catalog = self._services.catalog
        caller = context.caller()
        client_tools = catalog.client_tool_names(body.get("tools"), caller)
        toolset = catalog.toolset(controls.tool_filter, caller)
        if toolset.schemas and body.get("n", 1) not in (1, None):
            raise BadRequestError("n > 1 is not supported with proxy tools", param="n")
        stream = body.get("stream") is True
        options = body.get("stream_options") or {}
        include_usage = stream and options.get("include_usage") is True
        turn = Turn(body, upstream, toolset, client_tools, controls, context.headers, caller)
        return turn, stream, include_usage
