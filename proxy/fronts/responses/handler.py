"""`POST /v1/responses`: the Responses API front (in the background too: `background: true`).

The records of stored responses (`GET`, `DELETE`, cancel, a background run's stream) are
`records.py`'s.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any

import orjson

from policies import ToolFilter
from registry import ToolSpec

from ...errors import BadRequestError
from ...server.context import RequestContext
from ...server.services import Services
from ...state.base import ResponseStore, StoredResponse
from ...state.runs import ACTIVE, RunEvent
from ...turn.catalog import Toolset
from ...turn.client_tools import mark
from ...turn.controls import parse_controls
from ...turn.events import LoopEvent
from ...turn.record import Turn
from ...upstreams.base import Relayable
from ..conversion import direct_responses, round_items, to_chat
from ..exchange import Answered, Relay, Reply, Streamed, TurnFront
from ..exchange import openai_error_body as error_body
from ..hosted import is_responses_search, served
from .background_run import Run
from .builder import STORED, ResponseBuilder, Stored
from .items import Item, for_rosetta, input_items, listed_labels
from .plan import ResponsePlan, echoed
from .records import LogStream, ResponseNotFoundError
from .render import ResponseJson, ResponseStream
from .request import ResponsesBody, parse_body
from .tools_plan import ToolsPlan, plan_tools


@dataclass(slots=True)
class _Prepared:
    """A request prepared: made per request, so not frozen (see `ResponsePlan`)."""

    turn: Turn
    plan: ResponsePlan
    conversation: list[Item]
    stream: bool
    store: bool
    bare: bool = False
    """The loop's body holds text messages alone (converted directly: no tool round, no
    `toolwire` field), so the loop need not look at them again (`ToolLoop.run`'s `bare`)."""
    background: Run | None = None
    """Run in the background (`background: true`): launched, and answered at once."""


class Responses(TurnFront):
    """`POST /v1/responses`, on the same loop as Chat Completions."""

    def __init__(self, services: Services) -> None:
        super().__init__(services, error_body)
        self._labelled: tuple[Toolset, dict[str, str]] | None = None
        """The labels of the last toolset labelled without `mcp` entries (toolsets are cached,
        so most requests of a key bring the same one)."""

    def _reply(self, raw: bytes, context: RequestContext) -> Reply | Awaitable[Reply]:
        """The request as its turn, and how the turn reaches the client: prepared without a
        wait (a plain function, not a coroutine) unless it continues a stored response or
        runs in the background (`_waited`).

        Raises:
            BadRequestError: the body, its controls or its tools are not valid.
            ModelNotFoundError: no upstream serves the model.
        """
        try:
            body = parse_body(orjson.loads(raw))
        except orjson.JSONDecodeError as exc:
            raise BadRequestError(f"the request body is not valid JSON: {exc}") from exc
        background = body.get("background")
        if not isinstance(background, bool | None):
            raise BadRequestError("background: must be a boolean", param="background")
        if background or body.get("previous_response_id") is not None:
            return self._waited(body, context)
        return self._replied(self._prepare(body, context, []))

    async def _waited(self, body: ResponsesBody, context: RequestContext) -> Reply:
        """The reply to a request that continues a stored response (read first), or runs in
        the background (launched first).

        Raises:
            ResponseNotFoundError: the previous response is unknown, or another key's.
            BadRequestError: the previous response still runs, or the background run cannot
                be launched (and what `_prepare` raises).
            TooManyRunsError: this replica runs its most background responses.
        """
        prior: list[Item] = []
        previous = body.get("previous_response_id")
        if previous is not None:
            stored = await self._services.responses.get(previous)
            if stored is None or not stored.visible_to(context.principal):
                raise ResponseNotFoundError(
                    f"previous response {previous!r} not found", param="previous_response_id"
                )
            if stored.response.get("status") in ACTIVE:
                raise BadRequestError(
                    f"previous response {previous!r} is still running in "
                    "the background: wait for its end (poll GET /v1/responses/{id})",
                    param="previous_response_id",
                )
            prior = stored.conversation
        prepared = self._prepare(body, context, prior)
        if prepared.plan.echo["background"]:
            prepared = await self._launch(prepared)
        return self._replied(prepared)

    def _prepare(
        self, body: ResponsesBody, context: RequestContext, prior: list[Item]
    ) -> _Prepared:
        """The checked request as the loop's turn and the response's plan, after `prior`
        (the conversation of the response it continues).

        Raises:
            BadRequestError: an input item, a tool, a tool choice or a control is not valid,
                or the input holds no message.
            ModelNotFoundError: no upstream serves the model.
        """
        services = self._services
        conversation = [*prior, *input_items(body["input"])]
        controls = parse_controls(body.get("toolwire"), context.headers)
        hosted = services.hosted_tools
        tools = plan_tools(body.get("tools"), services.registry, conversation, hosted)
        if (tools.programmatic or tools.code_interpreter) and controls.code_mode is None:
            controls = dataclasses.replace(controls, code_mode=True)
        tool_filter = controls.tool_filter
        entries = tools.entries  # none: no narrowing, nothing to ask or defer (read no further)
        if entries:
            tool_filter = tool_filter.narrow(ToolFilter(names=tools.names))
        caller = context.caller(tools.must_ask if entries else _NONE)
        load = tools.found if tools.web_search is None else tools.found | tools.hosted_names
        toolset = services.catalog.toolset(
            tool_filter, caller, defer=tools.deferred if entries else _NONE, load=load
        )
        web_search = None
        if tools.web_search is not None:
            web_search = served(tools.web_search, toolset)
        # Text messages and no function tool: made at once, the body `to_chat` would give.
        chat = None if tools.functions else direct_responses(body, conversation)
        bare = chat is not None
        if chat is None:
            chat = self._converted(body, conversation, tools, toolset)
            mark(chat, tools.marks)
        if not chat.get("messages"):
            raise BadRequestError("'input' holds no message", param="input")
        turn = Turn(
            chat,
            services.upstreams.for_model(body["model"]),
            toolset,
            services.catalog.client_tool_names(chat.get("tools"), caller),
            controls,
            context.headers,
            caller,
        )
        labels = self._labels(tools, toolset)
        plan = ResponsePlan(
            body["model"],
            echoed(body),
            labels,
            bool(entries) or controls.stream_tool_events,
            _listings(tools, toolset, labels, listed_labels(conversation)) if entries else (),
            tools,
            web_search,
        )  # positional: keywords would cost a call as much again
        stream, store = body.get("stream") is True, body.get("store") is not False
        return _Prepared(turn, plan, conversation, stream, store, bare)

    @staticmethod
    def _converted(
        body: ResponsesBody, conversation: list[Item], tools: ToolsPlan, toolset: Toolset
    ) -> dict[str, Any]:
        """The request as the loop's Chat body, through llm-rosetta.

        Raises:
            BadRequestError: an item is malformed, the tool choice names no tool, or rosetta
                cannot convert the request.
        """
        request = _chat_request(body, conversation, tools, toolset)
        chat = to_chat(request, "openai_responses")
        choice = request.get("tool_choice")
        if isinstance(choice, dict) and "tool_choice" not in chat:
            # llm-rosetta drops a choice naming none of the client's tools: a registry tool's.
            chat["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
        return chat

    def _labels(self, tools: ToolsPlan, toolset: Toolset) -> dict[str, str]:
        """The server label of each of the toolset's tools, by wire name."""
        if tools.entries:
            return {wire: tools.label(tool) for wire, tool in toolset.by_wire_name.items()}
        labelled = self._labelled
        if labelled is not None and labelled[0] is toolset:
            return labelled[1]
        labels = {wire: tools.label(tool) for wire, tool in toolset.by_wire_name.items()}
        self._labelled = (toolset, labels)
        return labels

    async def _launch(self, prepared: _Prepared) -> _Prepared:
        """Start the turn in the background, detached from this request.

        Raises:
            BadRequestError: `store` is false, or this proxy runs no background responses.
            TooManyRunsError: this replica runs its most background responses.
        """
        runs = self._services.background
        if not prepared.store:
            raise BadRequestError(
                "a background response is stored: 'store' cannot be false with 'background': true",
                param="store",
            )
        if runs is None:
            raise BadRequestError("background responses are not served here", param="background")
        turn = prepared.turn
        # Streamed from the upstream whether or not this request streams: the run's events
        # come as they are made, for any client that follows them.
        turn.body["stream"] = True
        run = Run(ResponseBuilder(prepared.plan), turn, prepared.conversation, runs.store)
        await runs.launch(run, lambda: self._services.loop.run(turn, prepared.bare))
        return dataclasses.replace(prepared, background=run)

    def _replied(self, prepared: _Prepared) -> Reply:
        run = prepared.background
        if run is not None:
            if prepared.stream:
                events = self._services.background.follow(run.id, None)  # type: ignore[union-attr]
                return Streamed(events, LogStream())
            return Answered(_nothing(), Fixed(run.queued))
        if prepared.stream:
            builder = ResponseBuilder(prepared.plan)
            events = self._services.loop.run(prepared.turn, prepared.bare)
            events = self._kept(events, builder, prepared)
            return Streamed(events, ResponseStream(builder))
        builder = ResponseBuilder(prepared.plan, quiet=True)
        builder.start()  # its listings open the output (a quiet builder makes no event)
        # The renderer made only for a turn's events: a relayed answer is rendered at once.
        return _new_reply(Relay, (self._answer(builder, prepared), ResponseJson, builder))

    async def _answer(
        self, builder: ResponseBuilder, prepared: _Prepared
    ) -> bytes | AsyncIterator[LoopEvent | Stored]:
        """An unstreamed response: rendered at once when the upstream answered the turn
        whole (`ToolLoop.relay`), else the turn's events for the renderer to fold."""
        answered = await self._services.loop.relay(prepared.turn, True, prepared.bare)
        if answered.__class__ is not Relayable:
            return self._kept(answered, builder, prepared)  # type: ignore[arg-type]
        builder.relayed(answered)  # type: ignore[arg-type]
        body = builder.body()
        if prepared.store:  # the body the client receives is the one stored
            await self._services.responses.put(prepared.plan.id, _stored(builder, prepared), body)
        return body

    def _kept(
        self, events: AsyncIterator[LoopEvent], builder: ResponseBuilder, prepared: _Prepared
    ) -> AsyncIterator[LoopEvent | Stored]:
        """The loop's events, and a response to store stored when its turn ends (`_Kept`)."""
        if not prepared.store:
            return events
        builder.keeps = True
        return _Kept(events, builder, prepared, self._services.responses)


class _Kept:
    """The loop's events for a response that is stored: each passed on as the loop yields it
    (no frame of this one's stays between the request's task and the loop, as an async
    generator's would on every resumption); once the renderer's builder folded the turn's
    `Finished`, the response is stored, then `STORED` hands the renderer the events that end
    it: a follow-up sent the moment the client sees the end finds it."""

    __slots__ = ("_builder", "_events", "_prepared", "_store")

    def __init__(
        self,
        events: AsyncIterator[LoopEvent],
        builder: ResponseBuilder,
        prepared: _Prepared,
        store: ResponseStore,
    ) -> None:
        self._events = events
        self._builder = builder
        self._prepared: _Prepared | None = prepared
        """The response to store; None once stored."""
        self._store = store

    def __aiter__(self) -> _Kept:
        return self

    def __anext__(self) -> Awaitable[LoopEvent | Stored]:
        if self._builder.status == "in_progress" or self._prepared is None:
            return self._events.__anext__()
        return self._stored(self._prepared)

    async def _stored(self, prepared: _Prepared) -> Stored:
        self._prepared = None
        builder = self._builder
        await self._store.put(prepared.plan.id, _stored(builder, prepared), builder.body())
        return STORED

    async def aclose(self) -> None:
        await self._events.aclose()  # type: ignore[attr-defined]


def _stored(builder: ResponseBuilder, prepared: _Prepared) -> StoredResponse:
    """The finished response as it is stored: with the conversation it ends, the turn's
    hidden tool rounds included, and the key that made it."""
    response = builder.final()
    assert response is not None  # made when the turn's end was folded
    rounds = builder.rounds
    if rounds and not prepared.plan.show_rounds:
        conversation = [*prepared.conversation, *round_items(rounds), *builder.output]
    else:
        conversation = [*prepared.conversation, *builder.output]
    return StoredResponse(response, conversation, prepared.turn.owner)


_NONE: frozenset[str] = frozenset()
_new_reply = tuple.__new__
"""Makes a reply (a named tuple) from its fields, without the named tuple's own `__new__`."""


class Fixed:
    """A JSON body known before the turn: a background response as it was queued."""

    def __init__(self, body: dict[str, Any]) -> None:
        self._body = body

    def feed(self, event: RunEvent) -> None:
        pass

    def encoded(self) -> bytes:
        return orjson.dumps(self._body)


async def _nothing() -> AsyncIterator[RunEvent]:
    return
    yield


def _chat_request(
    body: ResponsesBody, conversation: list[Item], tools: ToolsPlan, toolset: Toolset
) -> dict[str, Any]:
    """The Responses body llm-rosetta converts: hosted-MCP parts already in Chat terms."""
    request: dict[str, Any] = {"model": body["model"], "input": for_rosetta(conversation)}
    if tools.functions:
        request["tools"] = tools.functions
    fields = (
        "instructions",
        "parallel_tool_calls",
        "max_output_tokens",
        "temperature",
        "top_p",
        "text",
        "reasoning",
        "stream",
    )
    for name in fields:
        value = body.get(name)
        if value is not None:
            request[name] = value
    choice = _tool_choice(body.get("tool_choice"), tools, toolset)
    if choice is not None:
        request["tool_choice"] = choice
    return request


def _tool_choice(choice: Any, tools: ToolsPlan, toolset: Toolset) -> Any:
    """The request's tool_choice; an `mcp` one names the registry tool by its wire name, and
    a hosted web search's the tool answering it."""
    if isinstance(choice, dict) and is_responses_search(choice.get("type")):
        if tools.web_search is None:
            raise BadRequestError("tool_choice names no tool of the request", param="tool_choice")
        return {"type": "function", "name": tools.web_search.wire_name}
    if not isinstance(choice, dict) or choice.get("type") != "mcp":
        return choice
    name = choice.get("name")
    if name is None:
        return "required"
    for wire, tool in toolset.by_wire_name.items():
        label = tools.label(tool)
        if label == choice.get("server_label") and name in (wire, tool.name, tool.qualified_name):
            return {"type": "function", "name": wire}
    raise BadRequestError(f"tool_choice names no tool {name!r}", param="tool_choice")


def _listings(
    tools: ToolsPlan, toolset: Toolset, labels: dict[str, str], listed: set[str]
) -> tuple[Item, ...]:
    """An `mcp_list_tools` item for each label this conversation has not listed yet."""
    listings: list[Item] = []
    for entry in tools.entries:
        if entry.label in listed or entry.deferred:
            continue
        listed.add(entry.label)
        described = [_listed(s) for s in toolset.specs if labels.get(s.name) == entry.label]
        listings.append(
            {
                "type": "mcp_list_tools",
                "id": f"mcpl_{secrets.token_hex(12)}",
                "server_label": entry.label,
                "tools": described,
                "error": None,
            }
        )
    return tuple(listings)


def _listed(spec: ToolSpec) -> dict[str, Any]:
    """A tool as an `mcp_list_tools` item lists it."""
    return {
        "name": spec.name,
        "description": spec.description,
        "input_schema": spec.parameters,
        "annotations": None,
    }
