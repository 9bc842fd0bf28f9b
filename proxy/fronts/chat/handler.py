"""`POST /v1/chat/completions`: parse the body into a turn, run the loop, render Chat."""

from __future__ import annotations

from ...errors import BadRequestError
from ...server.context import RequestContext
from ...server.services import Services
from ...turn.controls import parse_controls
from ...turn.record import Turn
from ..exchange import Relay, Reply, Streamed, TurnFront
from ..exchange import openai_error_body as error_body
from .render import ChatJsonRenderer, ChatStreamRenderer, ResponseMeta
from .request import parse_body

_NO_TOOLS: frozenset[str] = frozenset()
"""The client's own tool names when it sent no `tools`."""
_new_reply = tuple.__new__
"""Makes a reply (a named tuple) from its fields, without the named tuple's own `__new__`
(a Python frame: about twice the cost)."""


class ChatCompletions(TurnFront):
    """The Chat Completions front."""

    def __init__(self, services: Services) -> None:
        super().__init__(services, error_body)

    def _reply(self, raw: bytes, context: RequestContext) -> Reply:
        """The request as its turn, and how the turn reaches the client (prepared without a
        wait: a plain function, not a coroutine).

        Raises:
            BadRequestError: the body, its controls or its tools are not valid.
            ModelNotFoundError: no upstream serves the model.
        """
        body, bare = parse_body(raw)
        controls = parse_controls(body.pop("toolwire", None), context.headers)
        services = self._services
        model = body["model"]
        upstream = services.upstreams.for_model(model)
        catalog = services.catalog
        caller = context.caller()
        tools = body.get("tools")
        client_tools = _NO_TOOLS if tools is None else catalog.client_tool_names(tools, caller)
        toolset = catalog.toolset(controls.tool_filter, caller)
        if toolset.specs and body.get("n", 1) not in (1, None):
            raise BadRequestError("n > 1 is not supported with proxy tools", param="n")
        turn = Turn(body, upstream, toolset, client_tools, controls, context.headers, caller)
        if body.get("stream") is not True:
            # The upstream's own answer when it is what this front renders (`relay`); the
            # renderer made only when it is not.
            return _new_reply(
                Relay, (services.loop.relay(turn, False, bare), ChatJsonRenderer, model)
            )
        options = body.get("stream_options")  # an object or null (`parse_body`)
        include_usage = options is not None and options.get("include_usage") is True
        # Positional: keywords would cost a call as much again.
        renderer = ChatStreamRenderer(
            ResponseMeta.new(model), include_usage, controls.stream_tool_events
        )
        return _new_reply(Streamed, (services.loop.run(turn, bare), renderer))
