"""An MCP server (the SDK's, over Streamable HTTP) that records the credential each call
carries, for sources acting for their callers.

Its tool `whoami` answers with a digest of the call's `Authorization` header (`none` without
one), and records it, so a test tells which caller's credential reached the server without
the credential appearing anywhere. Requests with a bearer token not in `accepted` (when that
is set) are refused with a 401, as a server refuses a revoked or wrong token; requests with
no `Authorization` at all (the source's own listing session) are served.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from mcp.server.mcpserver import Context, MCPServer
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from testing.asgi_serving import serve_app

__all__ = ["Recording", "digest", "serve_recording"]


def digest(credential: str | None) -> str:
    """What `whoami` answers for a call carrying the `Authorization` value `credential`."""
    if credential is None:
        return "none"
    return hashlib.sha256(credential.encode()).hexdigest()[:16]


@dataclass
class Recording:
    """The server's URL, the digests of the calls' credentials in order, and the credentials
    it accepts (None: any)."""

    url: str = ""
    calls: list[str] = field(default_factory=list)
    accepted: set[str] | None = None
    refused: int = 0


class _Refusing:
    """Refuses a bearer token outside `accepted`, as a server refuses a bad token."""

    def __init__(self, app: ASGIApp, recording: Recording) -> None:
        self._app = app
        self._recording = recording

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        accepted = self._recording.accepted
        if scope["type"] == "http" and accepted is not None:
            headers = dict(scope["headers"])
            given = headers.get(b"authorization")
            if given is not None and given.decode() not in accepted:
                self._recording.refused += 1
                response = JSONResponse({"error": "invalid_token"}, status_code=401)
                await response(scope, receive, send)
                return
        await self._app(scope, receive, send)


def _server(recording: Recording) -> MCPServer:
    server = MCPServer("toolwire-test-callers")

    @server.tool()
    def whoami(ctx: Context) -> str:
        """A digest of the credential this call carried."""
        headers = ctx.headers or {}
        mark = digest(headers.get("authorization"))
        recording.calls.append(mark)
        return mark

    return server


@contextlib.asynccontextmanager
async def serve_recording() -> AsyncIterator[Recording]:
    """Serve the recording server on an ephemeral loopback port."""
    recording = Recording()
    app = _server(recording).streamable_http_app()
    async with serve_app(_Refusing(app, recording), timeout_graceful_shutdown=1) as root:
        recording.url = f"{root}/mcp"
        yield recording
