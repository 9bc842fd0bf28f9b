"""An MCP server's requests to its client during a call: questions (elicitation, form and
URL modes) go to the caller's asker, completions (sampling) to its sampler.

Two styles reach here. A 2025-era connection sends `elicitation/create` or
`sampling/createMessage` mid-call; the request names no call. On Streamable HTTP it comes on
the call's own response stream, which tells the call (`origins`); elsewhere (stdio, SSE) it
is routed to the one caller with calls in flight on this server (several callers at once
cannot be told apart: the question is declined, saying so). A 2026-07-28 call returns
`input_required` with the questions; they are asked in the call's own context and the call
is repeated with the answers and the server's `requestState`.

A caller that offers no asker gets its questions declined with the reason in `_meta`
(`toolwire/reason`), never dropped: the server always gets an answer.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from registry.clock import CallClock, call_clock
from registry.mcp.errors import McpCallError
from registry.mcp.hooks import ClientHooks, Question, Reply, client_hooks
from registry.mcp.origins import Origins
from registry.mcp.sampling import SamplingConfig, SamplingDesk

__all__ = ["MAX_ROUNDS", "ClientRequests", "InFlight"]

log = logging.getLogger("toolwire.mcp.elicitation")

MAX_ROUNDS = 10
"""`input_required` rounds of one call before it fails (a server that never settles)."""
REASON_META = "toolwire/reason"

Retry = Callable[
    [types.InputResponses, str | None], Awaitable[types.CallToolResult | types.InputRequiredResult]
]


@dataclass(frozen=True, slots=True)
class InFlight:
    """A call on this session: its tool, what its caller offers, its timeout's clock."""

    tool: str
    hooks: ClientHooks | None
    clock: CallClock | None = None
    key: str | None = None
    """The call's progress token, by which `origins` names it."""


class ClientRequests:
    """One session's answers to its server's requests, for the calls it has in flight."""

    def __init__(self, server: str, sampling: SamplingConfig) -> None:
        self._server = server
        self._calls: dict[int, InFlight] = {}
        self._ids = itertools.count()
        self._desk = SamplingDesk(server, sampling)
        self.origins = Origins()
        """Which call each server request came with (Streamable HTTP only)."""

    @contextlib.contextmanager
    def calling(self, tool: str, key: str | None = None) -> Iterator[InFlight]:
        """Mark a call of `tool` (progress token `key`) in flight with the hooks its caller
        offers (`client_hooks`) and its clock (`call_clock`), read in the call's context."""
        token = next(self._ids)
        call = InFlight(tool, client_hooks.get(), call_clock.get(), key)
        self._calls[token] = call
        try:
            yield call
        finally:
            del self._calls[token]

    async def elicit(
        self, context: object, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """The SDK's elicitation callback (an in-band question of some call in flight)."""
        caller = self._caller(context)
        if isinstance(caller, str):
            return _result(self._declined(caller, params.message))
        calls = caller
        tool = " or ".join(sorted({call.tool for call in calls}))
        hooks = calls[0].hooks
        assert hooks is not None
        with contextlib.ExitStack() as paused:
            for call in calls:
                if call.clock is not None:
                    paused.enter_context(call.clock.paused())
            return _result(await self._ask(hooks, _question(self._server, tool, params)))

    async def sample(
        self, context: object, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        """The SDK's sampling callback."""
        caller = self._caller(context)
        hooks = None if isinstance(caller, str) else caller[0].hooks
        return await self._desk.answer(hooks, params)

    async def settle(
        self,
        call: InFlight,
        result: types.CallToolResult | types.InputRequiredResult,
        retry: Retry,
    ) -> types.CallToolResult:
        """Answer a 2026-07-28 call's `input_required` rounds until it returns its result.

        Raises:
            McpCallError: the server asked for more than `MAX_ROUNDS` rounds, or for
                something this client does not serve (roots).
        """
        for _ in range(MAX_ROUNDS):
            if not isinstance(result, types.InputRequiredResult):
                return result
            responses: types.InputResponses = {}
            for key, request in (result.input_requests or {}).items():
                with call.clock.paused() if call.clock is not None else contextlib.nullcontext():
                    responses[key] = await self._input(call.tool, call.hooks, request)
            result = await retry(responses, result.request_state)
        if isinstance(result, types.InputRequiredResult):
            raise McpCallError(
                f"MCP server {self._server} still required input after {MAX_ROUNDS} rounds"
            )
        return result

    async def _input(
        self, tool: str, hooks: ClientHooks | None, request: types.InputRequest
    ) -> types.InputResponse:
        if isinstance(request, types.ElicitRequest):
            if hooks is None or hooks.asker is None:
                return _result(self._declined(_NO_ASKER, request.params.message))
            return _result(await self._ask(hooks, _question(self._server, tool, request.params)))
        if isinstance(request, types.CreateMessageRequest):
            answer = await self._desk.answer(hooks, request.params)
            if isinstance(answer, types.ErrorData):
                raise McpCallError(
                    f"MCP server {self._server} asked for a completion: {answer.message}"
                )
            return answer
        raise McpCallError(
            f"MCP server {self._server} asked for roots, which Toolwire does not serve"
        )

    def _caller(self, context: object) -> list[InFlight] | str:
        """The in-flight calls of the one caller a 2025-era request can belong to, or why
        there is none."""
        key = self.origins.call_of(getattr(context, "request_id", None))
        known = [call for call in self._calls.values() if key is not None and call.key == key]
        if known:
            return known if known[0].hooks is not None else _NO_ASKER
        offered = [call for call in self._calls.values() if call.hooks is not None]
        callers = {id(call.hooks) for call in offered}
        if not offered:
            return _NO_ASKER if self._calls else "no call is in flight on this server"
        if len(callers) > 1:
            return (
                f"{len(callers)} requests have calls in flight on this server, and its "
                "requests do not say which call asks (a 2025-era connection)"
            )
        return offered

    async def _ask(self, hooks: ClientHooks, question: Question) -> Reply:
        if hooks.asker is None:
            return self._declined(_NO_ASKER, question.message)
        reply = await hooks.asker.ask(question)
        hooks.note(self._server, "elicitation", reply.action)
        log.info(
            "MCP source %s: %s answered %r (%s) with %s",
            self._server,
            hooks.who or "the client",
            question.message,
            question.mode,
            reply.action,
        )
        return reply

    def _declined(self, reason: str, message: str) -> Reply:
        log.info("MCP source %s: declined %r: %s", self._server, message, reason)
        return Reply.declined(reason)


_NO_ASKER = "the caller cannot be asked (it offers no way to answer a question)"


def _question(server: str, tool: str, params: types.ElicitRequestParams) -> Question:
    if isinstance(params, types.ElicitRequestURLParams):
        return Question(
            server,
            tool,
            "url",
            params.message,
            url=params.url,
            elicitation_id=params.elicitation_id,
        )
    return Question(server, tool, "form", params.message, requested_schema=params.requested_schema)


def _result(reply: Reply) -> types.ElicitResult:
    meta: Any = {REASON_META: reply.reason} if reply.reason else None
    content = reply.content if reply.action == "accept" else None
    return types.ElicitResult(action=reply.action, content=content, _meta=meta)
