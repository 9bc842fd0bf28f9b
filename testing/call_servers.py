"""MCP servers, written with the SDK, whose tools give every kind of `tools/call` outcome:
text, an image, structured content under an output schema, an `isError` result, progress
notifications, a call that waits until it is cancelled (and says so in a file), a server that
dies mid-call; and (`wrong`) a lowlevel server whose answers the client must reject or report:
structured content that does not match its output schema, and a JSON-RPC error.

Run one over stdio with `python -m testing.call_servers calls` (or `wrong`).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.server.stdio import stdio_server
from pydantic import BaseModel

__all__ = ["PNG_BYTES", "calls_server", "wrong_server"]

PNG_BYTES = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
"""A 1x1 PNG."""
_SIZE_SCHEMA = {
    "type": "object",
    "properties": {"area": {"type": "integer"}},
    "required": ["area"],
}


class Size(BaseModel):
    width: int
    height: int
    area: int


def calls_server() -> MCPServer:
    """`text`, `image`, `measure` (structured), `fail`, `count` (progress), `wait`,
    `request_id`, `die`."""
    server = MCPServer("toolwire-test-calls")

    @server.tool()
    def text(words: str) -> str:
        """The words, upper-cased."""
        return words.upper()

    @server.tool()
    def image() -> Image:
        """A tiny PNG."""
        return Image(data=PNG_BYTES, format="png")

    @server.tool()
    def measure(width: int, height: int) -> Size:
        """A rectangle's size, as structured content."""
        return Size(width=width, height=height, area=width * height)

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails (an `isError` result)."""
        raise ToolError(reason)

    @server.tool()
    async def count(steps: int, ctx: Context) -> str:
        """Reports progress once a step."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
        return f"counted {steps}"

    @server.tool()
    async def wait(started_file: str, cancelled_file: str) -> str:
        """Creates `started_file`, then waits until cancelled, creating `cancelled_file`."""
        try:
            await anyio.Path(started_file).touch()
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await anyio.Path(cancelled_file).touch()
            raise
        return "never"

    @server.tool()
    def request_id(ctx: Context) -> str:
        """The JSON-RPC id of this call's request, as JSON."""
        return json.dumps(ctx.request_context.request_id)

    @server.tool()
    def die() -> str:
        """Ends the server's process in the middle of the call."""
        os._exit(3)

    return server


def wrong_server() -> Server[Any]:
    """`misshapen`: structured content against its own output schema; `refuse`: a JSON-RPC
    error; `fine`: a result that matches."""
    tools = [
        types.Tool(
            name=name,
            description=name,
            input_schema={"type": "object", "properties": {}},
            output_schema=_SIZE_SCHEMA if name != "refuse" else None,
        )
        for name in ("misshapen", "refuse", "fine")
    ]

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "refuse":
            raise MCPError(code=types.INVALID_PARAMS, message="refused: no such order")
        area: Any = "large" if params.name == "misshapen" else 12
        return types.CallToolResult(
            content=[types.TextContent(text=f"area {area}")], structured_content={"area": area}
        )

    return Server("toolwire-test-wrong", on_list_tools=list_tools, on_call_tool=call_tool)


async def _run(name: str) -> None:
    if name == "calls":
        await calls_server().run_stdio_async()
        return
    server = wrong_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("name", choices=["calls", "wrong"])
    anyio.run(_run, parser.parse_args().name)
