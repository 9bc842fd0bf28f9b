"""The tool-loop benchmark's MCP server (the mcp SDK's `MCPServer`): one tool, `echo`.

python bench/loop_mcp_server.py                # stdio
python bench/loop_mcp_server.py --http PORT    # Streamable HTTP at http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

if __name__ == "__main__":  # run by path, bench/ is sys.path[0]: import `bench` from the root
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench import loop_tools


def build() -> MCPServer:
    """A server with the benchmark's `echo` tool (the Python tool, unchanged)."""
    server = MCPServer("toolwire-bench-loop", log_level="WARNING")
    server.tool()(loop_tools.echo)
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP at /mcp")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    server = build()
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
