"""`POST /v1/messages` (Anthropic Messages) and `/v1/messages/count_tokens`."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson

from ...errors import BadRequestError, ClientDisconnectedError, ProxyError
from ...server.asgi import Receive, Scope, Send, read_body, send_json
from ...server.context import RequestContext, context_of
from ...server.services import Loop, Services
from ...turn.client_tools import DEFER_LOADING, mark
from ...turn.controls import parse_controls
from ...turn.events import LoopEvent
from ...turn.record import Turn
from ...upstreams.base import Relayable
from ..exchange import Relay, Reply, Streamed, TurnFront, send_error
from ..hosted import Declared, HostedTool, declare, messages_type, served
from ..renderers import BuilderJson
from .errors import error_body
from .programmatic import client_marks, code_execution_type, programs_shown, tool_search_name
from .references import load_references
from .render import MessageBuilder, MessageStream
from .request import parse_body, to_chat_body
from .searches import replay_searches

_NO_TOOLS: frozenset[str] = frozenset()
_new_reply = tuple.__new__
"""Makes a reply (a named tuple) from its fields, without the named tuple's own `__new__`."""


class NotFoundError(ProxyError):
    status = 404
    type = "not_found_error"


@dataclass(slots=True)
class _Prepared:
    """A prepared request (not changed once made; a plain dataclass, as one is made per
    request: a frozen one sets each field through `object.__setattr__`)."""

    turn: Turn
    stream: bool
    program_type: str | None
    """The code execution tool the client declared (programmatic tool calling)."""
    search_name: str | None
    """The tool-search tool the client declared."""
    programs_shown: frozenset[str]
    """Programs earlier turns showed (their `server_tool_use` blocks)."""
    hosted: tuple[HostedTool, ...] = ()
    """The hosted tools the client declared (web search, web fetch), as this request serves
    them."""
    bare: bool = False
    """The loop's body holds text turns alone (no tool round, no `toolwire` field): the loop
    need not look at its messages again (`ToolLoop.run`'s `bare`)."""


class Messages(TurnFront):
    """The Anthropic Messages front, on the same loop as the others.

    Client tools (`tools` with `input_schema`) come back as `tool_use` blocks with
    `stop_reason: "tool_use"`; the proxy's own rounds are hidden.
    """

    def __init__(self, services: Services) -> None:
        super().__init__(services, error_body)

    def _reply(self, raw: bytes, context: RequestContext) -> Reply:
        """The request as its turn, and how the turn reaches the client (prepared without a
        wait: a plain function, not a coroutine).

        Raises:
            BadRequestError: the body, its controls or its tools are not valid.
            ModelNotFoundError: no upstream serves the model.
        """
        return self._replied(self._prepare(raw, context))

    def _prepare(self, raw: bytes, context: RequestContext) -> _Prepared:
        try:
            document = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise BadRequestError(f"the request body is not valid JSON: {exc}") from exc
        body = parse_body(document)
        controls = parse_controls(body.get("toolwire"), context.headers)
        services = self._services
        caller = context.caller()
        if document.get("tools") is None and _text_turns(document["messages"]):
            # No tool and no block: nothing hosted, programmatic, referenced or searched; the
            # Chat body's messages are text turns (rosetta keeps no field but role and content).
            chat = to_chat_body(document)
            toolset = services.catalog.toolset(controls.tool_filter, caller)
            upstream = services.upstreams.for_model(body["model"])
            turn = Turn(chat, upstream, toolset, _NO_TOOLS, controls, context.headers, caller)
            stream = body.get("stream") is True
            return _Prepared(turn, stream, None, None, _NO_TOOLS, (), True)
        program_type = code_execution_type(document)
        if program_type is not None and controls.code_mode is None:
            # The client asked for programmatic tool calling: code mode answers it.
            controls = dataclasses.replace(controls, code_mode=True)
        search_name = tool_search_name(document)
        declared = self._hosted(document)
        for one in declared:
            document = replay_searches(document, one.served)
        forced = _forced(document.get("tool_choice"), declared)
        if forced is not None:  # it names no tool of the client's: set once converted
            document = {k: v for k, v in document.items() if k != "tool_choice"}
        shown = programs_shown(document) if program_type is not None else frozenset()
        document, loaded = load_references(document)
        document, marks = client_marks(document)
        for name in loaded:  # a search loaded it: offered from now on
            marks.get(name, {}).pop(DEFER_LOADING, None)
        chat = to_chat_body(document)
        mark(chat, marks)
        if forced is not None:
            chat["tool_choice"] = {"type": "function", "function": {"name": forced}}
        # A deferred tool answering a hosted one is offered from the start: the client asked.
        load = loaded | {one.wire_name for one in declared}
        toolset = services.catalog.toolset(controls.tool_filter, caller, load=load)
        hosted = tuple(served(one, toolset) for one in declared)
        if hosted:
            limits = tuple(limit for one in hosted for limit in one.limits)
            controls = dataclasses.replace(controls, max_uses=limits)
        turn = Turn(
            chat,
            services.upstreams.for_model(body["model"]),
            toolset,
            services.catalog.client_tool_names(chat.get("tools"), caller),
            controls,
            context.headers,
            caller,
        )
        return _Prepared(turn, body.get("stream") is True, program_type, search_name, shown, hosted)

    def _hosted(self, document: dict[str, Any]) -> list[Declared]:
        """The hosted tools the request declares (web search, web fetch), each with the
        registry tool answering it.

        Raises:
            BadRequestError: it declares one twice, or one this proxy does not answer.
        """
        declared: dict[str, Declared] = {}
        mapping, registry = self._services.hosted_tools, self._services.registry
        for i, tool in enumerate(document.get("tools") or ()):
            hosted = messages_type(tool.get("type")) if isinstance(tool, dict) else None
            if hosted is None:
                continue
            if hosted in declared:
                raise BadRequestError(f"tools.{i}: declare one {hosted} tool")
            refused = ("allowed_domains", "blocked_domains")
            where = f"tools.{i}"
            declared[hosted] = declare(
                tool, where, mapping, registry, hosted=hosted, refused=refused
            )
        return list(declared.values())

    def _replied(self, prepared: _Prepared) -> Reply:
        turn, stream = prepared.turn, prepared.stream
        builder = MessageBuilder(
            turn.body["model"],
            prepared.program_type,
            prepared.search_name,
            prepared.programs_shown,
            turn.controls.stream_tool_events,
            prepared.hosted,
            not stream,
        )  # positional: keywords would cost a call as much again
        if stream:
            events = self._services.loop.run(turn, prepared.bare)
            return _new_reply(Streamed, (events, MessageStream(builder)))
        # The renderer made only for a turn's events: a relayed answer is rendered at once
        # (a quiet builder's `start` makes nothing, so none is missed).
        answer = _relayed(self._services.loop, turn, builder, prepared.bare)
        return _new_reply(Relay, (answer, BuilderJson, builder))


async def _relayed(
    loop: Loop, turn: Turn, builder: MessageBuilder, bare: bool
) -> bytes | AsyncIterator[LoopEvent]:
    """An unstreamed turn's answer: the message made at once
    from the upstream's relayed answer (`MessageBuilder.relayed`), else the turn's events for
    the builder to fold.

    Raises:
        ProxyError: the upstream failed or rejected the request.
    """
    answered = await loop.relay(turn, True, bare)
    if answered.__class__ is not Relayable:
        return answered  # type: ignore[return-value]
    return builder.relayed(answered)  # type: ignore[arg-type]


def _text_turns(messages: list[dict[str, Any]]) -> bool:
    """Whether every message of a checked request is a string of text (no block)."""
    for message in messages:  # noqa: SIM110 (a loop: `all` would make a generator)
        if message["content"].__class__ is not str:
            return False
    return True


def _forced(choice: Any, declared: list[Declared]) -> str | None:
    """The wire name of the registry tool a `tool_choice` forces when it names a hosted tool
    (`{"type": "tool", "name": "web_search"}`)."""
    if not isinstance(choice, dict) or choice.get("type") != "tool":
        return None
    return next((one.wire_name for one in declared if one.name == choice.get("name")), None)


class CountTokens:
    """`POST /v1/messages/count_tokens`: only an upstream that counts can answer it."""

    def __init__(self, services: Services) -> None:
        self._services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        context = context_of(scope)
        try:
            raw = await read_body(receive, scope, self._services.server)
            document = orjson.loads(raw)
            model = document.get("model") if isinstance(document, dict) else None
            if not isinstance(model, str) or not model:
                raise BadRequestError("model: Field required", param="model")
            upstream = self._services.upstreams.for_model(model)
            counter = getattr(upstream, "count_tokens", None)
            if counter is None:
                raise NotFoundError(
                    f"count_tokens is not available: the upstream serving {model!r} does not "
                    "count tokens (only an Anthropic upstream does)"
                )
            counted = await counter(document, headers=context.headers)
        except ClientDisconnectedError:
            return
        except orjson.JSONDecodeError as exc:
            bad = BadRequestError(f"the request body is not valid JSON: {exc}")
            await send_error(send, bad, context, error_body)
            return
        except ProxyError as exc:
            await send_error(send, exc, context, error_body)
            return
        await send_json(send, 200, counted, {"x-request-id": context.request_id})
