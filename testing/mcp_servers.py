"""MCP servers for tests, written with the SDK's server API.

Run one over stdio with `python -m testing.mcp_servers NAME`, or serve one over Streamable
HTTP or SSE on an ephemeral port in the test's event loop with `serve_http(NAME, transport)`.

- `demo`: text, structured, image, mixed-content, failing, slow and annotated tools.
- `paged`: 250 tools listed 7 per page.
- `changing`: calling `grow` adds a tool, `reword` changes one, `drop` removes one; each
  sends `notifications/tools/list_changed`.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.server.stdio import stdio_server
from starlette.applications import Starlette
from starlette.types import ASGIApp

__all__ = [
    "PAGED_TOOLS",
    "PNG_BYTES",
    "build",
    "child_pids",
    "process_state",
    "serve_http",
    "stdio_command",
]

PNG_BYTES = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
"""A 1x1 PNG."""
PAGED_TOOLS = 250
_PAGE_SIZE = 7
HttpTransport = Literal["streamable-http", "sse"]


def demo_server() -> MCPServer:
    """Tools that exercise every kind of result."""
    server = MCPServer("toolwire-test-demo")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    def picture() -> Image:
        """A tiny PNG image."""
        return Image(data=PNG_BYTES, format="png")

    @server.tool()
    def mixed() -> list[types.ContentBlock]:
        """One block of every other content type."""
        return [
            types.TextContent(text="several kinds of content"),
            types.EmbeddedResource(
                resource=types.TextResourceContents(
                    uri="file:///notes.txt", mime_type="text/plain", text="the notes"
                )
            ),
            types.EmbeddedResource(
                resource=types.BlobResourceContents(
                    uri="file:///data.bin", mime_type="application/octet-stream", blob="AAECAw=="
                )
            ),
            types.ResourceLink(
                uri="file:///report.pdf", name="report", mime_type="application/pdf"
            ),
            types.AudioContent(data="UklGRg==", mime_type="audio/wav"),
        ]

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails with the given reason."""
        raise ToolError(reason)

    @server.tool()
    async def slow(seconds: float, started_file: str = "") -> str:
        """Sleep, then answer; creates `started_file` first, so a test knows the call arrived."""
        if started_file:
            await anyio.Path(started_file).touch()
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=True),
    )
    def lookup(key: str) -> str:
        """Read-only, open-world lookup."""
        return f"value of {key}"

    @server.tool(annotations=types.ToolAnnotations(destructive_hint=True))
    def delete_item(item_id: str) -> str:
        """Destructive deletion."""
        return f"deleted {item_id}"

    return server


def paged_server() -> Server[Any]:
    """A lowlevel server with `PAGED_TOOLS` tools, listed a few per page."""
    tools = [
        types.Tool(
            name=f"tool_{index:03d}",
            description=f"Tool number {index}",
            input_schema={"type": "object", "properties": {}},
        )
        for index in range(PAGED_TOOLS)
    ]

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + _PAGE_SIZE
        cursor = str(end) if end < len(tools) else None
        return types.ListToolsResult(tools=tools[start:end], next_cursor=cursor)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=f"called {params.name}")])

    return Server("toolwire-test-paged", on_list_tools=list_tools, on_call_tool=call_tool)


def changing_server() -> MCPServer:
    """Each `grow` call adds a tool `extra_N`, `reword` gives one a new description, `drop`
    removes one; each tells the client the list changed."""
    server = MCPServer("toolwire-test-changing")
    added: list[str] = []

    def extra_tool(name: str, description: str) -> None:
        def extra() -> str:
            return f"{name} works"

        server.add_tool(extra, name=name, description=description)

    @server.tool()
    async def grow(ctx: Context, tool: str = "") -> str:
        """Add a tool (`tool`, else the next `extra_N`) and notify."""
        name = tool or f"extra_{len(added) + 1}"
        extra_tool(name, f"Added at run time ({name})")
        added.append(name)
        # Legacy sessions get the bare notification; 2026 ones only through subscriptions.
        await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @server.tool()
    async def reword(tool: str, description: str, ctx: Context) -> str:
        """Give an added tool a new description and notify."""
        server.remove_tool(tool)
        extra_tool(tool, description)
        await ctx.session.send_tool_list_changed()
        return f"reworded {tool}"

    @server.tool(
        annotations=types.ToolAnnotations(
            read_only_hint=False, destructive_hint=True, open_world_hint=False
        )
    )
    async def drop(tool: str, ctx: Context) -> str:
        """Remove a tool and notify."""
        server.remove_tool(tool)
        await ctx.session.send_tool_list_changed()
        return f"dropped {tool}"

    return server


def build(name: str) -> MCPServer | Server[Any]:
    """The named test server."""
    factories = {"demo": demo_server, "paged": paged_server, "changing": changing_server}
    return factories[name]()


async def run_stdio(name: str) -> None:
    """Serve the named server on stdin/stdout."""
    server = build(name)
    if isinstance(server, MCPServer):
        await server.run_stdio_async()
        return
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def _app(name: str, transport: HttpTransport) -> Starlette:
    server = build(name)
    if not isinstance(server, MCPServer):
        raise ValueError(f"{name}: only MCPServer servers are served over HTTP here")
    if transport == "sse":
        return server.sse_app()
    return server.streamable_http_app()


@contextlib.asynccontextmanager
async def serve_http(
    name: str,
    transport: HttpTransport,
    wrap: Callable[[ASGIApp], ASGIApp] | None = None,
    *,
    keep_alive_s: int = 5,
) -> AsyncIterator[str]:
    """Serve the named server on an ephemeral loopback port (its app wrapped by `wrap`, if
    given; idle connections kept `keep_alive_s`); yields its URL."""
    app: ASGIApp = _app(name, transport)
    path = "/sse" if transport == "sse" else "/mcp"
    # Imported here: it loads the proxy, which a stdio server (a process per test) never needs.
    from testing.asgi_serving import serve_app

    served = serve_app(
        app if wrap is None else wrap(app), timeout_graceful_shutdown=1, keep_alive_s=keep_alive_s
    )
    async with served as root:
        yield root + path


def stdio_command(name: str) -> list[str]:
    """The `command` of an `mcp:` entry that runs the named server over stdio."""
    return ["python", "-m", "testing.mcp_servers", name]


def child_pids(parent: int | None = None) -> set[int]:
    """Processes whose parent is `parent` (default: this process), zombies included, from /proc."""
    parent = os.getpid() if parent is None else parent
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it exited while we looked
        if int(fields[1]) == parent:
            found.add(int(entry))
    return found


def process_state(pid: int) -> str | None:
    """The /proc state letter of a process (Z: zombie), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", choices=["demo", "paged", "changing"])
    anyio.run(run_stdio, parser.parse_args().name)


if __name__ == "__main__":
    main()
