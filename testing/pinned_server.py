"""An MCP server (the SDK's low-level `Server`, over stdio) whose tools are described by a
JSON file read when it starts, so that a test changes a tool's definition between runs, as a
server that is updated does: `python -m testing.pinned_server FILE`.

The file maps tool names to `{"description": ..., "parameter": ...}` (the one string
parameter's name, default `url`); each tool answers `NAME ran with VALUE`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

__all__ = ["build", "command", "write"]


def command(path: Path) -> list[str]:
    """The `command` of an `mcp:` entry that runs the server on `path`."""
    return [sys.executable, "-m", "testing.pinned_server", str(path)]


def write(path: Path, tools: dict[str, dict[str, Any]]) -> None:
    """Describe the server's tools for its next start."""
    path.write_bytes(orjson.dumps(tools))


def build(path: Path) -> Server[Any]:
    """The server for the tools `path` describes (read now)."""
    specs: dict[str, dict[str, Any]] = orjson.loads(path.read_bytes())
    tools = [
        types.Tool(
            name=name,
            description=spec["description"],
            input_schema={
                "type": "object",
                "properties": {spec.get("parameter", "url"): {"type": "string"}},
                "required": [spec.get("parameter", "url")],
            },
        )
        for name, spec in specs.items()
    ]

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        value = next(iter((params.arguments or {}).values()), "")
        text = f"{params.name} ran with {value}"
        return types.CallToolResult(content=[types.TextContent(text=text)])

    return Server("toolwire-test-pinned", on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve(path: Path) -> None:
    server = build(path)
    async with stdio_server() as (read, write_stream):
        await server.run(read, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(_serve, Path(sys.argv[1]))
