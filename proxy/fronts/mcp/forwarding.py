"""An MCP source's question during a `/mcp` client's call, asked of that client in turn.

When a call made through `/mcp` reaches an MCP source whose server asks something
(elicitation, form or URL), the question is forwarded to the `/mcp` client as its own
`elicitation/create`, on the call's response stream, and the client's answer goes back to
the server. A client that cannot be asked (no elicitation capability for that mode, a
connection with no channel for it: 2026-07-28 connections and JSON responses) gets the
question declined for it, with the reason sent to the server. A 2026-07-28 client that
declared elicitation is asked by round trip instead (`HeldCalls`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from registry import ClientHooks, Question, Reply, ToolResult

from ...errors import ProxyError
from ...turn.questions import QUESTION_PREFIX, Questions, Ran
from .content import call_result

__all__ = ["FORWARD_TIMEOUT_S", "QUESTION_KEY", "ClientAsker", "HeldCalls"]

FORWARD_TIMEOUT_S = 600.0
"""How long a forwarded question waits for the `/mcp` client (as `elicitation.timeout_s`'s
default); past it, it is declined."""


class ClientAsker:
    """Asks the `/mcp` client of one call the questions its MCP sources ask."""

    def __init__(
        self, ctx: ServerRequestContext[Any, Any], *, timeout_s: float = FORWARD_TIMEOUT_S
    ) -> None:
        self._ctx = ctx
        self._timeout_s = timeout_s

    async def ask(self, question: Question) -> Reply:
        session = self._ctx.session
        if not (session.can_send_request and _supports(session, question.mode)):
            return Reply.declined(
                f"the /mcp client cannot be asked: it declared no {question.mode} elicitation, "
                "or its connection has no channel for a question"
            )
        message = f"{question.message}\n(asked by MCP server {question.server})"
        try:
            with anyio.fail_after(self._timeout_s):
                if question.mode == "url":
                    answer = await session.elicit_url(
                        message,
                        question.url or "",
                        question.elicitation_id or "",
                        self._ctx.request_id,
                    )
                else:
                    schema: Any = question.requested_schema or {"type": "object"}
                    answer = await session.elicit_form(message, schema, self._ctx.request_id)
        except TimeoutError:
            return Reply.declined(f"the /mcp client did not answer within {self._timeout_s:g} s")
        except MCPError as exc:
            return Reply.declined(f"the /mcp client could not answer: {exc}")
        content = answer.content if answer.action == "accept" else None
        return Reply(answer.action, dict(content) if content is not None else None)


def _supports(session: Any, mode: str) -> bool:
    """Whether the client declared elicitation in `mode` (a bare `elicitation: {}` is form)."""
    capabilities = session.client_capabilities
    declared = capabilities.elicitation if capabilities is not None else None
    if declared is None:
        return False
    if mode == "url":
        return declared.url is not None
    return declared.form is not None or declared.url is None


QUESTION_KEY = "question"
"""The key of a forwarded question in an `input_required` result."""


class HeldCalls:
    """Sources' questions for 2026-07-28 `/mcp` clients, which have no in-band channel: the
    call is held (as a turn's is), its question returned as an `input_required` result, and
    the client's repeated call, carrying the answer and the question's id as `requestState`
    (sealed by the server, bound to the key), resumes it, on any replica."""

    def __init__(self, questions: Questions, *, timeout_s: float = FORWARD_TIMEOUT_S) -> None:
        self._questions = questions
        self._timeout_s = timeout_s

    def offered(self, owner: str, asker: ClientAsker) -> ClientHooks:
        """What a call not held offers its servers: `asker`, and the turns' sampler."""
        return dataclasses.replace(self._questions.hooks(_Caller(owner)), asker=asker)

    @staticmethod
    def holds(ctx: ServerRequestContext[Any, Any]) -> bool:
        """Whether this client is asked by round trips (a 2026-07-28 connection that
        declared elicitation)."""
        capabilities = ctx.session.client_capabilities
        declared = capabilities is not None and capabilities.elicitation is not None
        return declared and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

    @staticmethod
    def answers(params: types.CallToolRequestParams) -> bool:
        """Whether a call repeats one whose source asked (its `requestState` names the
        question)."""
        return (params.request_state or "").startswith(QUESTION_PREFIX)

    async def run(
        self, owner: str, work: Callable[[], Awaitable[list[ToolResult]]], call_id: str
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Run the call held; its result, or its source's first question."""
        caller = _Caller(owner)
        ran = await self._questions.run(caller, work, [call_id], self._timeout_s)
        if ran.asked is not None:
            await self._questions.keep(caller, ran.asked)
        return _outcome(ran)

    async def resume(
        self, owner: str, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Give the held call the client's answer; its result, or its next question.

        Raises:
            MCPError: the key has no open question of that id (`INVALID_PARAMS`).
        """
        answer = (params.input_responses or {}).get(QUESTION_KEY)
        if isinstance(answer, types.ElicitResult):
            content = answer.content if answer.action == "accept" else None
            reply = Reply(answer.action, dict(content) if content is not None else None)
        else:
            reply = Reply.declined("the /mcp client sent no answer to the question")
        try:
            ran = await self._questions.answer(
                _Caller(owner), params.request_state or "", reply, self._timeout_s
            )
        except ProxyError as exc:
            raise MCPError(types.INVALID_PARAMS, exc.message) from exc
        return _outcome(ran)


@dataclass(frozen=True, slots=True)
class _Caller:
    owner: str


def _outcome(ran: Ran) -> types.CallToolResult | types.InputRequiredResult:
    if ran.asked is None:
        assert ran.results is not None
        (result,) = ran.results
        return call_result(result)
    question = ran.asked.question
    message = f"{question['message']}\n(asked by MCP server {question['server']})"
    params: types.ElicitRequestParams
    if question["mode"] == "url":
        params = types.ElicitRequestURLParams(
            message=message, url=question["url"], elicitation_id=question["elicitation_id"] or ""
        )
    else:
        params = types.ElicitRequestFormParams(
            message=message, requested_schema=question["requested_schema"]
        )
    return types.InputRequiredResult(
        input_requests={QUESTION_KEY: types.ElicitRequest(params=params)},
        request_state=ran.asked.id,
    )
