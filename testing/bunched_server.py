"""An MCP server, written with the SDK, that sends a call's progress notifications and its
answer together: every message it sends is held until an answer follows, then all are
written to stdout in one write, so its client reads them in one read (as a server that
buffers its output, or a pipe read after a busy moment, gives them).

`count` reports `steps` steps of progress, then answers. Run it over stdio with
`python -m testing.bunched_server`.
"""

from __future__ import annotations

import os
from typing import BinaryIO

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

__all__ = ["bunched_server"]


def bunched_server() -> MCPServer:
    """`count` (progress, then its answer)."""
    server = MCPServer("toolwire-test-bunched")

    @server.tool()
    async def count(steps: int, ctx: Context) -> str:
        """Reports progress once a step."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
        return f"counted {steps}"

    return server


async def _write_bunched(
    outgoing: MemoryObjectReceiveStream[SessionMessage], wire: BinaryIO
) -> None:
    """Write what the server sends, holding every message until an answer is among them."""
    held: list[bytes] = []
    async with outgoing:
        async for item in outgoing:
            held.append(item.message.model_dump_json(by_alias=True, exclude_unset=True).encode())
            if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
                wire.write(b"".join(line + b"\n" for line in held))
                wire.flush()
                held.clear()


async def _run() -> None:
    server = bunched_server()
    send, outgoing = anyio.create_memory_object_stream[SessionMessage](16)
    # The pipe itself, taken before the SDK diverts stdout to stderr for the server's code.
    wire = os.fdopen(os.dup(1), "wb")
    async with stdio_server() as (read, write), anyio.create_task_group() as tasks:
        await write.aclose()  # the SDK's writer: the pipe is written here instead
        tasks.start_soon(_write_bunched, outgoing, wire)
        async with send:
            await server._lowlevel_server.run(
                read, send, server._lowlevel_server.create_initialization_options()
            )


if __name__ == "__main__":
    anyio.run(_run)
