"""MCP session ids that cannot be guessed.

The SDK names a session `uuid4().hex`: 122 random bits. The MCP spec's security
practices ask for cryptographically secure ids; Toolwire gives each session 256 random
bits, so an id is a bearer of the session (which also stays bound to the key that
opened it).
"""

from __future__ import annotations

import secrets

from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

SESSION_ID_BYTES = 32
"""Random bytes in a session id (256 bits), written as URL-safe base64 (43 characters)."""


def new_session_id() -> str:
    """A fresh session id: visible ASCII only, as the spec requires."""
    return secrets.token_urlsafe(SESSION_ID_BYTES)


class SessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, naming each new session with `new_session_id`."""

    def _admit_session(
        self, requestor: AuthorizationContext | None
    ) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        if transport is None or transport.mcp_session_id is None:
            return transport
        # Re-key the session before anything has seen its id: its opening request is
        # served only after admission returns.
        old = transport.mcp_session_id
        transport.mcp_session_id = new_session_id()
        self._server_instances[transport.mcp_session_id] = self._server_instances.pop(old)
        owner = self._session_owners.pop(old, None)
        if owner is not None:
            self._session_owners[transport.mcp_session_id] = owner
        return transport
