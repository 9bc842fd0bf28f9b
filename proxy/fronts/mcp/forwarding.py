"""An MCP source's question during a `/mcp` client's call, asked of that client in turn.

When a call made through `/mcp` reaches an MCP source whose server asks something
(elicitation, form or URL), the question is forwarded to the `/mcp` client as its own
`elicitation/create`, on the call's response stream, and the client's answer goes back to
the server. A client that cannot be asked (no elicitation capability for that mode, a
connection with no channel for it: 2026-07-28 connections and JSON responses) gets the
question declined for it, with the reason sent to the server.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from registry import Question, Reply

__all__ = ["FORWARD_TIMEOUT_S", "ClientAsker"]

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
