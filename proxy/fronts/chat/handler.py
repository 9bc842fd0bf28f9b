"""`POST /v1/chat/completions`: parse the body into a turn, run the loop, render Chat."""

from __future__ import annotations

from collections.abc import Awaitable

from ...errors import BadRequestError
from ...server.asgi import Receive, Scope, Send
from ...server.context import RequestContext
from ...server.services import Services
from ...turn.controls import parse_controls
from ...turn.record import Turn
from ..exchange import Relaying, Reply, Streamed, serve_turn
from ..exchange import openai_error_body as error_body
from .render import ChatJsonRenderer, ChatStreamRenderer, ResponseMeta
from .request import parse_body

_Prepared = tuple[Turn, bool, bool]
"""The turn, whether it streams, and whether the stream ends with a usage chunk."""


class ChatCompletions:
    """The Chat Completions front as a raw ASGI app (so disconnects cancel the work)."""

    def __init__(self, services: Services) -> None:
        self._services = services

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        # serve_turn's coroutine, not awaited here: no frame of this one stays on the
        # request's task (see server/middleware.py).
        return serve_turn(
            scope, receive, send, self._services, self._prepare, self._reply, error_body
        )

    async def _prepare(self, raw: bytes, context: RequestContext) -> _Prepared:
        body = parse_body(raw)
        controls = parse_controls(body.pop("toolwire", None), context.headers)
        upstream = self._services.upstreams.for_model(body["model"])
        catalog = self._services.catalog
        caller = context.caller()
        client_tools = catalog.client_tool_names(body.get("tools"), caller)
        toolset = catalog.toolset(controls.tool_filter, caller)
        if toolset.specs and body.get("n", 1) not in (1, None):
            raise BadRequestError("n > 1 is not supported with proxy tools", param="n")
        stream = body.get("stream") is True
        options = body.get("stream_options") or {}
        include_usage = stream and options.get("include_usage") is True
        turn = Turn(body, upstream, toolset, client_tools, controls, context.headers, caller)
        return turn, stream, include_usage

    def _reply(self, prepared: _Prepared) -> Reply:
        turn, stream, include_usage = prepared
        model = turn.body["model"]
        if not stream:
            # The upstream's own answer when it is what this front renders (`relay`).
            return Relaying(self._services.loop.relay(turn), ChatJsonRenderer(model))
        tool_events = turn.controls.stream_tool_events
        renderer = ChatStreamRenderer(
            ResponseMeta.new(model), include_usage=include_usage, tool_events=tool_events
        )
        return Streamed(self._services.loop.run(turn), renderer)
