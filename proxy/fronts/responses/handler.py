"""`POST /v1/responses`: the Responses API front (in the background too: `background: true`).

The records of stored responses (`GET`, `DELETE`, cancel, a background run's stream) are
`records.py`'s.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson

from policies import ToolFilter
from registry import ToolSpec

from ...errors import BadRequestError
from ...server.asgi import Receive, Scope, Send
from ...server.context import RequestContext
from ...server.services import Services
from ...state.base import StoredResponse
from ...state.runs import ACTIVE, RunEvent
from ...turn.catalog import Toolset
from ...turn.client_tools import mark
from ...turn.controls import parse_controls
from ...turn.events import Finished, LoopEvent
from ...turn.record import Turn
from ..conversion import round_items, to_chat
from ..exchange import Answered, Reply, Streamed, serve_turn
from ..exchange import openai_error_body as error_body
from ..hosted import is_responses_search, served
from ..renderers import BuilderJson, BuilderStream
from .background_run import Run
from .items import Item, for_rosetta, input_items, listed_labels
from .records import LogStream, ResponseNotFoundError
from .render import ResponseBuilder, ResponsePlan, Stored
from .request import ResponsesBody, ToolsPlan, parse_body, plan_tools


@dataclass(frozen=True, slots=True)
class _Prepared:
    turn: Turn
    plan: ResponsePlan
    conversation: list[Item]
    stream: bool
    store: bool
    background: Run | None = None
    """Run in the background (`background: true`): launched, and answered at once."""


class Responses:
    """`POST /v1/responses` as a raw ASGI app, on the same loop as Chat Completions."""

    def __init__(self, services: Services) -> None:
        self._services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await serve_turn(
            scope, receive, send, self._services, self._prepare, self._reply, error_body
        )

    async def _prepare(self, raw: bytes, context: RequestContext) -> _Prepared:
        try:
            body = parse_body(orjson.loads(raw))
        except orjson.JSONDecodeError as exc:
            raise BadRequestError(f"the request body is not valid JSON: {exc}") from exc
        if not isinstance(getattr(body, "background", None), bool | None):
            raise BadRequestError("background: must be a boolean", param="background")
        services = self._services
        prior: list[Item] = []
        if body.previous_response_id is not None:
            stored = await services.responses.get(body.previous_response_id)
            if stored is None or not stored.visible_to(context.principal):
                raise ResponseNotFoundError(
                    f"previous response {body.previous_response_id!r} not found",
                    param="previous_response_id",
                )
            if stored.response.get("status") in ACTIVE:
                raise BadRequestError(
                    f"previous response {body.previous_response_id!r} is still running in "
                    "the background: wait for its end (poll GET /v1/responses/{id})",
                    param="previous_response_id",
                )
            prior = stored.conversation
        conversation = [*prior, *input_items(body.input)]
        controls = parse_controls(body.toolwire, context.headers)
        tools = plan_tools(body.tools, services.registry, conversation, services.hosted_tools)
        if (tools.programmatic or tools.code_interpreter) and controls.code_mode is None:
            controls = dataclasses.replace(controls, code_mode=True)
        tool_filter = controls.tool_filter
        if tools.names is not None:
            tool_filter = tool_filter.narrow(ToolFilter(names=tools.names))
        caller = context.caller(tools.must_ask)
        toolset = services.catalog.toolset(
            tool_filter, caller, defer=tools.deferred, load=tools.found | tools.hosted_names
        )
        web_search = None
        if tools.web_search is not None:
            web_search = served(tools.web_search, toolset)
        chat = to_chat(_chat_request(body, conversation, tools, toolset), "openai_responses")
        mark(chat, tools.marks)
        choice = _tool_choice(body.tool_choice, tools, toolset)
        if isinstance(choice, dict) and "tool_choice" not in chat:
            # llm-rosetta drops a choice naming none of the client's tools: a registry tool's.
            chat["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
        if not chat.get("messages"):
            raise BadRequestError("'input' holds no message", param="input")
        turn = Turn(
            chat,
            services.upstreams.for_model(body.model),
            toolset,
            services.catalog.client_tool_names(chat.get("tools"), caller),
            controls,
            context.headers,
            caller,
        )
        labels = {wire: tools.label(tool) for wire, tool in toolset.by_wire_name.items()}
        plan = ResponsePlan(
            model=body.model,
            echo=_echo(body),
            labels=labels,
            show_rounds=bool(tools.entries) or controls.stream_tool_events,
            programmatic=tools.programmatic,
            tool_search=tools.tool_search,
            namespaced=tools.namespaced,
            client_search=tools.client_search,
            programs_shown=tools.programs_shown,
            namespaces=tools.namespace_descriptions,
            web_search=web_search,
            code_interpreter=tools.code_interpreter,
            listings=_listings(tools, toolset, labels, listed_labels(conversation)),
        )
        prepared = _Prepared(turn, plan, conversation, body.stream is True, body.store is not False)
        if plan.echo["background"]:
            prepared = await self._launch(prepared)
        return prepared

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
        await runs.launch(run, lambda: self._services.loop.run(turn))
        return dataclasses.replace(prepared, background=run)

    def _reply(self, prepared: _Prepared) -> Reply:
        run = prepared.background
        if run is not None:
            if prepared.stream:
                events = self._services.background.follow(run.id, None)  # type: ignore[union-attr]
                return Streamed(events, LogStream())
            return Answered(_nothing(), Fixed(run.queued))
        builder = ResponseBuilder(prepared.plan)
        events = self._kept(self._services.loop.run(prepared.turn), builder, prepared)
        if prepared.stream:
            return Streamed(events, BuilderStream(builder))
        return Answered(events, BuilderJson(builder))

    async def _kept(
        self, events: AsyncIterator[LoopEvent], builder: ResponseBuilder, prepared: _Prepared
    ) -> AsyncIterator[LoopEvent | Stored]:
        """The loop's events; a finished response is stored before the client sees its end,
        so a follow-up sent the moment it arrives finds it. Its `Finished` is folded here,
        and passes on as the `Stored` events that end the response."""
        async for event in events:
            if isinstance(event, Finished) and prepared.store:
                closing = builder.finish(event)
                hidden = [] if prepared.plan.show_rounds else round_items(event.rounds)
                conversation = [*prepared.conversation, *hidden, *builder.output]
                stored = StoredResponse(builder.response(), conversation, prepared.turn.owner)
                await self._services.responses.put(prepared.plan.id, stored)
                yield Stored(closing)
            else:
                yield event


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
    request: dict[str, Any] = {"model": body.model, "input": for_rosetta(conversation)}
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
        value = getattr(body, name)
        if value is not None:
            request[name] = value
    choice = _tool_choice(body.tool_choice, tools, toolset)
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


def _echo(body: ResponsesBody) -> dict[str, Any]:
    """The request fields every response object repeats, with OpenAI's defaults."""
    return {
        "instructions": body.instructions,
        "previous_response_id": body.previous_response_id,
        "tools": body.tools or [],
        "tool_choice": body.tool_choice if body.tool_choice is not None else "auto",
        "parallel_tool_calls": body.parallel_tool_calls is not False,
        "max_output_tokens": body.max_output_tokens,
        "max_tool_calls": None,
        "temperature": body.temperature if body.temperature is not None else 1.0,
        "top_p": body.top_p if body.top_p is not None else 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "top_logprobs": 0,
        "text": body.text or {"format": {"type": "text"}},
        "reasoning": body.reasoning or {"effort": None, "summary": None},
        "truncation": "disabled",
        "store": body.store is not False,
        "background": getattr(body, "background", None) is True,
        "service_tier": "default",
        "metadata": body.metadata or {},
        "user": body.user,
        "safety_identifier": None,
        "prompt_cache_key": None,
    }
