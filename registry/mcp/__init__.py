"""The MCP tool source: servers over stdio, Streamable HTTP or SSE, and servers files."""

from __future__ import annotations

from registry.mcp.config import McpServerConfig, McpServersJsonConfig, McpSourceConfig
from registry.mcp.content import to_output
from registry.mcp.errors import McpCallError, McpConnectionLostError, McpUnavailableError
from registry.mcp.servers_json import McpServersJsonSource, read_servers_json
from registry.mcp.source import McpSource

__all__ = [
    "McpCallError",
    "McpConnectionLostError",
    "McpServerConfig",
    "McpServersJsonConfig",
    "McpServersJsonSource",
    "McpSource",
    "McpSourceConfig",
    "McpUnavailableError",
    "read_servers_json",
    "to_output",
]
