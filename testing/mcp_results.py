"""An MCP server, written with the SDK, whose tool returns a result of any size: the one
the spilled-results tests read back in parts. Every line is numbered and some hold a
two-byte character, so that a range or a search can be checked byte for byte against
`report_text`.

Serve it over Streamable HTTP in the test's event loop with `serve_results()`, or over
stdio with `python -m testing.mcp_results`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator

import anyio
from mcp.server.mcpserver import MCPServer

from testing.asgi_serving import serve_app

__all__ = ["report_text", "results_server", "serve_results"]


@functools.lru_cache(maxsize=4)
def report_text(kilobytes: int) -> str:
    """The report of about `kilobytes` KiB: numbered lines, every tenth with an é."""
    lines: list[str] = []
    size = 0
    row = 0
    while size < kilobytes * 1024:
        line = f"row {row:07d}: value={row * 7919 % 1000003} {'é' if row % 10 == 0 else 'e'}\n"
        lines.append(line)
        size += len(line.encode())
        row += 1
    return "".join(lines)


def results_server() -> MCPServer:
    """A server with `report`, a tool whose result is as long as asked."""
    server = MCPServer("toolwire-test-results")

    @server.tool()
    def report(kilobytes: int) -> str:
        """A numbered report of about this many KiB."""
        return report_text(kilobytes)

    return server


@contextlib.asynccontextmanager
async def serve_results() -> AsyncIterator[str]:
    """Serve the server over Streamable HTTP on an ephemeral loopback port; yields its URL."""
    app = results_server().streamable_http_app()
    async with serve_app(app, timeout_graceful_shutdown=1) as root:
        yield root + "/mcp"


if __name__ == "__main__":
    anyio.run(results_server().run_stdio_async)
