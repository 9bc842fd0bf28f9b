"""`/mcp`: the registry served outward over MCP (Streamable HTTP), under the same keys
and the same gate as every other front."""

from .server import McpFront

__all__ = ["McpFront"]
