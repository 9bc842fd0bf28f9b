"""What the admin takes from browsers: requests naming this server only, and changes as JSON.

Without a key the admin trusts the peer address alone, which a web page the user opens
shares: it may post a form or a `no-cors` fetch across origins (CSRF), and after DNS
rebinding read the answers. Such requests carry a foreign `Host` or `Origin` (403 here), and
none of them can be `Content-Type: application/json` without a CORS preflight, which this
server never grants (415 here for any other body type on a state-changing method).
"""

from __future__ import annotations

from starlette.types import ASGIApp

from ..server.asgi import Receive, Scope, Send, send_json
from ..server.context import context_of
from ..server.hosts import AllowedHosts
from .routes import error_body

_CHANGES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_JSON = "application/json"


class BrowserGuard:
    """Pure ASGI: refuses foreign `Host` / `Origin` (403) and non-JSON changes (415) before
    the admin app sees the request; errors in the admin's (OpenAI's) error shape."""

    def __init__(self, app: ASGIApp, hosts: AllowedHosts) -> None:
        self.app = app
        self._hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = context_of(scope).headers
            refusal = self._hosts.refusal(headers, scope.get("server"))
            if refusal is not None:
                await send_json(send, 403, error_body(403, refusal))
                return
            if scope["method"] in _CHANGES and not _is_json(headers.get("content-type", "")):
                message = f"changes take a JSON body: send 'Content-Type: {_JSON}'"
                await send_json(send, 415, error_body(415, message))
                return
        await self.app(scope, receive, send)  # type: ignore[arg-type]


def _is_json(content_type: str) -> bool:
    return content_type.partition(";")[0].strip().lower() == _JSON
