"""An MCP server whose tools ask their client mid-call: a form question, a URL question, a
completion request (sampling). Each tool returns what its client answered, as JSON, so a
test reads the answer the server received.

Run it over stdio with `python -m testing.asking_servers`, or over Streamable HTTP in the
test's own event loop with `serve_asking()` (no process to start).
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import AsyncIterator

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning

from testing.asgi_serving import serve_app

__all__ = ["BOOKING_SCHEMA", "asking_server", "serve_asking"]

BOOKING_SCHEMA: types.ElicitRequestedSchema = {
    "type": "object",
    "properties": {
        "date": {"type": "string", "description": "the day, YYYY-MM-DD"},
        "guests": {"type": "integer", "minimum": 1},
    },
    "required": ["date", "guests"],
}


def _answer(result: types.ElicitResult) -> str:
    reason = (result.meta or {}).get("toolwire/reason")
    return json.dumps({"action": result.action, "content": result.content, "reason": reason})


def asking_server() -> MCPServer:
    """`book_table` (a form), `book_twice` (two forms), `link_account` (a URL),
    `book_stateless` (a form in an `input_required` result), `summarize` (sampling), `echo`."""
    server = MCPServer("toolwire-test-asking")

    @server.tool()
    async def book_table(city: str, ctx: Context) -> str:
        """Book a table; asks for the date and the number of guests."""
        result = await ctx.request_context.session.elicit_form(
            f"Which day, and for how many, in {city}?", BOOKING_SCHEMA, ctx.request_id
        )
        return _answer(result)

    @server.tool()
    async def book_twice(city: str, ctx: Context) -> str:
        """Asks two questions in turn; returns both answers."""
        session = ctx.request_context.session
        first = await session.elicit_form(f"Day in {city}?", BOOKING_SCHEMA, ctx.request_id)
        second = await session.elicit_form("And the day after?", BOOKING_SCHEMA, ctx.request_id)
        return f"[{_answer(first)}, {_answer(second)}]"

    @server.tool()
    async def link_account(ctx: Context) -> str:
        """Sends the user to a URL to sign in."""
        result = await ctx.request_context.session.elicit_url(
            "Sign in to link your account",
            "https://example.test/link?s=1",
            "link-1",
            ctx.request_id,
        )
        return _answer(result)

    @server.tool()
    async def summarize(text: str, ctx: Context) -> str:
        """Asks the client's model for a one-line summary."""
        # Sampling is deprecated from 2026-07-28 on; servers of the 2025 era still ask.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            result = await ctx.request_context.session.create_message(
                [types.SamplingMessage(role="user", content=types.TextContent(text=text))],
                max_tokens=5000,
                system_prompt="Summarize in one line.",
                related_request_id=ctx.request_id,
            )
        content = result.content
        text_out = content.text if isinstance(content, types.TextContent) else ""
        return json.dumps({"model": result.model, "text": text_out})

    @server.tool()
    async def book_stateless(city: str, ctx: Context) -> str | types.InputRequiredResult:
        """Asks in the 2026-07-28 style (a 2026-07-28 connection only): returns
        `input_required` with the question, and is called again with the answer and the
        state it gave."""
        answers = ctx.input_responses or {}
        answer = answers.get("when")
        if ctx.request_state != f"asked:{city}" or not isinstance(answer, types.ElicitResult):
            question = types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message=f"When, in {city}?", requested_schema=BOOKING_SCHEMA
                )
            )
            return types.InputRequiredResult(
                input_requests={"when": question}, request_state=f"asked:{city}"
            )
        return _answer(answer)

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    return server


@contextlib.asynccontextmanager
async def serve_asking(transport: str = "streamable-http") -> AsyncIterator[str]:
    """Serve the asking server over Streamable HTTP (or SSE) on an ephemeral loopback
    port; yields its URL."""
    server = asking_server()
    app = server.sse_app() if transport == "sse" else server.streamable_http_app()
    async with serve_app(app, timeout_graceful_shutdown=1) as root:
        yield root + ("/sse" if transport == "sse" else "/mcp")


if __name__ == "__main__":
    anyio.run(asking_server().run_stdio_async)
