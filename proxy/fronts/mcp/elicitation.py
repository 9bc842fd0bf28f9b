"""Asking an MCP client to approve an `ask` call, in either era of the protocol.

Handshake sessions (2025-11-25 and before) are asked in-band: an `elicitation/create`
request on the call's own response stream, answered while the call waits. 2026-07-28
connections have no such channel; the call returns `input_required` with the question,
and the client repeats the call carrying the answer and the `requestState` it was given.
That state is sealed by the SDK (AES-GCM, bound to the tool, its arguments, the caller's
key and an expiry) and names a one-time ticket here, so each question is answered once.

Every path fails closed: no elicitation support, no answer in time, a declined or
malformed answer, a ticket used twice: the call does not run.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from registry import ErrorKind, Tool, ToolCall, ToolResult

from ...server.context import context_of
from .content import call_result

QUESTION_KEY = "approval"
"""The key of the approval question in an `input_required` result."""

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Approve", "description": "Run this call now"}
    },
    "required": ["approve"],
}
"""The form an approval question shows the user."""

MAX_OPEN_QUESTIONS = 10_000
_ELICITATION = types.ClientCapabilities(elicitation=types.ElicitationCapability())


class Approvals:
    """Asks MCP clients before `ask` calls run; holds the open round-trip tickets."""

    def __init__(self, *, timeout_s: float, max_open: int = MAX_OPEN_QUESTIONS) -> None:
        self._timeout_s = timeout_s
        self._max_open = max_open
        self._tickets: OrderedDict[str, float] = OrderedDict()
        """Open round-trip questions: ticket → when it expires (monotonic)."""

    def boundary(self, audience: str) -> RequestStateBoundary:
        """The server middleware that seals and checks `requestState` for these tickets."""
        security = RequestStateSecurity(
            keys=[secrets.token_bytes(32)],
            ttl=self._timeout_s,
            bind_principal=_principal,
            audience=audience,
        )
        return RequestStateBoundary(security, default_audience=audience)

    @staticmethod
    def round_trip(ctx: ServerRequestContext[Any, Any]) -> bool:
        """Whether this connection is asked by `input_required` results (2026-07-28)."""
        return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

    def question(
        self, ctx: ServerRequestContext[Any, Any], tool: Tool, call: ToolCall, reason: str
    ) -> types.InputRequiredResult | types.CallToolResult:
        """The `input_required` result asking to approve `call`, or the refusal when the
        client cannot be asked."""
        if not ctx.session.check_client_capability(_ELICITATION):
            return call_result(_cannot_ask(call, reason))
        now = time.monotonic()
        while self._tickets and next(iter(self._tickets.values())) <= now:
            self._tickets.popitem(last=False)
        if len(self._tickets) >= self._max_open:
            full = "too many approvals are open; try later"
            return call_result(ToolResult.error(call.id, ErrorKind.APPROVAL_REQUIRED, full))
        ticket = secrets.token_urlsafe(16)
        self._tickets[ticket] = now + self._timeout_s
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=_message(tool, call, reason), requested_schema=APPROVAL_SCHEMA
            )
        )
        return types.InputRequiredResult(
            input_requests={QUESTION_KEY: request}, request_state=ticket
        )

    async def answer(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.CallToolRequestParams,
        tool: Tool,
        call: ToolCall,
        reason: str,
    ) -> ToolResult | None:
        """None when the client approved `call`; else the result saying why it did not run.

        On a round-trip connection the answer is the one `params` carries (under a ticket
        not used before); on a handshake session the client is asked now, in-band.
        """
        if not self.round_trip(ctx):
            return await self._ask_in_band(ctx, tool, call, reason)
        expires = self._tickets.pop(params.request_state or "", None)
        if expires is None or expires <= time.monotonic():
            return ToolResult.error(
                call.id, ErrorKind.APPROVAL_REQUIRED, "the approval was already used or expired"
            )
        return _verdict(call, (params.input_responses or {}).get(QUESTION_KEY))

    async def _ask_in_band(
        self, ctx: ServerRequestContext[Any, Any], tool: Tool, call: ToolCall, reason: str
    ) -> ToolResult | None:
        session = ctx.session
        if not (session.can_send_request and session.check_client_capability(_ELICITATION)):
            return _cannot_ask(call, reason)
        message = _message(tool, call, reason)
        try:
            with anyio.fail_after(self._timeout_s):
                answer = await session.elicit_form(message, APPROVAL_SCHEMA, ctx.request_id)
        except TimeoutError:
            return ToolResult.error(
                call.id,
                ErrorKind.APPROVAL_REQUIRED,
                f"no answer to the approval request within {self._timeout_s:g} s",
            )
        except MCPError as exc:
            return ToolResult.error(
                call.id, ErrorKind.APPROVAL_REQUIRED, f"the approval request failed: {exc}"
            )
        return _verdict(call, answer)


def _verdict(call: ToolCall, answer: object) -> ToolResult | None:
    """None for an accepted `{"approve": true}`; any other answer is a refusal."""
    accepted = isinstance(answer, types.ElicitResult) and answer.action == "accept"
    content = answer.content if accepted and isinstance(answer, types.ElicitResult) else None
    if content is not None and content.get("approve") is True:
        return None
    return ToolResult.error(call.id, ErrorKind.DENIED, "the user refused the call")


def _cannot_ask(call: ToolCall, reason: str) -> ToolResult:
    return ToolResult.error(
        call.id,
        ErrorKind.APPROVAL_REQUIRED,
        f"the call needs approval ({reason}), and this MCP client cannot be asked: it "
        "declared no elicitation support, or its connection has no channel for the question",
    )


def _message(tool: Tool, call: ToolCall, reason: str) -> str:
    arguments = orjson.dumps(call.arguments).decode()
    return f"Run {tool.qualified_name} with {arguments}?\nThe proxy's policy asks: {reason}."


def _principal(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The key a `requestState` is bound to: the one that authenticated the request."""
    if ctx.request is None:
        return None
    principal = context_of(ctx.request.scope).principal
    return principal.name if principal is not None else None
