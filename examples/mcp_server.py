"""A small MCP server to point Toolwire at: notes kept in memory, a dice roll, an image.

Run it over stdio from proxy.yaml:

    tools:
      - mcp: {command: [python, examples/mcp_server.py]}
        namespace: notes

or over Streamable HTTP (`python examples/mcp_server.py --http 9000`) with
`- mcp: {url: http://127.0.0.1:9000/mcp}`; `--sse 9000` serves SSE at /sse.
"""

from __future__ import annotations

import argparse
import base64
import random

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import ToolAnnotations

server = MCPServer("toolwire-example-notes")
_notes: dict[str, str] = {}
_DOT_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_note(title: str) -> str:
    """Read the note with this title."""
    return _notes.get(title, f"no note titled {title!r}")


@server.tool()
def write_note(title: str, text: str) -> str:
    """Create or replace a note."""
    _notes[title] = text
    return f"saved {title!r}"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_note(title: str) -> str:
    """Delete a note."""
    return "deleted" if _notes.pop(title, None) is not None else "no such note"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def roll_dice(sides: int = 6) -> int:
    """Roll a die with the given number of sides."""
    return random.randint(1, sides)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def dot() -> Image:
    """A one-pixel PNG, to see images reach the model."""
    return Image(data=_DOT_PNG, format="png")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP at /mcp")
    group.add_argument("--sse", type=int, metavar="PORT", help="serve SSE at /sse")
    args = parser.parse_args()
    if args.http:
        server.run("streamable-http", port=args.http)
    elif args.sse:
        server.run("sse", port=args.sse)
    else:
        server.run()
