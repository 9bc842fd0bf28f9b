"""Errors of the MCP source; each reaches the model as the text of an error result."""

from __future__ import annotations

from registry.errors import RegistryError

__all__ = ["McpCallError", "McpConnectionLostError", "McpUnavailableError"]


class McpUnavailableError(RegistryError):
    """The server is not connected (down, or reconnecting after a failure)."""


class McpConnectionLostError(RegistryError):
    """The connection died while a call was in flight; the call is not re-run."""


class McpCallError(RegistryError):
    """The server answered a call with a protocol error or an unusable result."""
