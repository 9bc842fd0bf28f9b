"""The MCP tool source: servers over stdio, Streamable HTTP or SSE, and servers files."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from registry.mcp.config import McpServerConfig, McpServersJsonConfig, McpSourceConfig
from registry.mcp.errors import McpCallError, McpConnectionLostError, McpUnavailableError

if TYPE_CHECKING:
    from registry.mcp.content import to_output
    from registry.mcp.lazy import LazyMcpSource, relisting
    from registry.mcp.servers_json import McpServersJsonSource, read_servers_json
    from registry.mcp.source import McpSource

# The MCP SDK takes ~0.4 s to import: only a configuration that uses MCP pays for it (and
# tool worker processes, which import `registry`, never do).
_LAZY = {
    "McpSource": "registry.mcp.source",
    "LazyMcpSource": "registry.mcp.lazy",
    "relisting": "registry.mcp.lazy",
    "McpServersJsonSource": "registry.mcp.servers_json",
    "read_servers_json": "registry.mcp.servers_json",
    "to_output": "registry.mcp.content",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'registry.mcp' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "LazyMcpSource",
    "McpCallError",
    "McpConnectionLostError",
    "McpServerConfig",
    "McpServersJsonConfig",
    "McpServersJsonSource",
    "McpSource",
    "McpSourceConfig",
    "McpUnavailableError",
    "read_servers_json",
    "relisting",
    "to_output",
]
