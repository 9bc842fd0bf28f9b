"""`/mcp`: the registry served outward as an MCP server over Streamable HTTP.

Sessions are stateful (the SDK's session manager, SSE responses): an `ask` tool asks the
client mid-call through elicitation, and the client's answer must find the waiting call.
Each session is bound to the key that opened it; every request in it is still judged by
its own key, which the edge authenticated before the request got here. Session ids carry
256 random bits (`sessions`); requests whose `Host` or browser `Origin` names anything but
this server are refused (DNS rebinding, `proxy.server.hosts`); clients hear
`notifications/tools/list_changed` whenever the registry changes (`changes`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ...config import McpServerConfig
from ...server.asgi import Receive, Scope, Send, send_json
from ...server.context import context_of
from ...server.hosts import AllowedHosts
from ...server.services import Services
from ...state.mcp_tasks import MemoryMcpTaskStore
from .changes import ToolChanges
from .elicitation import Approvals
from .events import RETRY_MS, StreamEvents
from .sessions import SessionManager
from .task_wire import EXTENSION
from .tasks import McpTasks
from .tools import McpTools

SERVER_NAME = "toolwire"
INSTRUCTIONS = (
    "Tools gathered behind a Toolwire proxy. Each call passes the proxy's policy; a call "
    "that needs approval asks you first, or is refused when it cannot ask."
)

ServerExtra = Callable[[Server[Any]], None]
"""Adds handlers or middleware to the MCP server before it serves; the product adds none
(the conformance test adds the suite's fixtures this way)."""

CACHE_HINTS: dict[CacheableMethod, CacheHint] = {
    # What the server is and does, the same for every key.
    "server/discover": CacheHint(ttl_ms=300_000, scope="public"),
    # The key's own tools; a change is announced (`notifications/tools/list_changed`), so
    # a client that listens may keep a list for a while.
    "tools/list": CacheHint(ttl_ms=60_000, scope="private"),
}
"""How long 2026-07-28 clients may keep list results (`ttlMs`, `cacheScope`)."""


class McpFront:
    """The `/mcp` endpoint: an ASGI app that serves MCP while `serving` runs, 503 before."""

    def __init__(self, hosts: AllowedHosts, extras: Sequence[ServerExtra] = ()) -> None:
        self._manager: SessionManager | None = None
        self._hosts = hosts
        self._extras = tuple(extras)

    @contextlib.asynccontextmanager
    async def serving(
        self,
        services: Services,
        *,
        approval_timeout_s: float,
        max_body_bytes: int,
        config: McpServerConfig | None = None,
    ) -> AsyncIterator[None]:
        """Serve MCP requests with `services` until the context exits (which ends every
        session)."""
        approvals = Approvals(timeout_s=approval_timeout_s)
        config = config or McpServerConfig()
        tools = McpTools(
            services.catalog,
            services.gate,
            authenticated=services.keys is not None,
            approvals=approvals,
            tasks=config.tasks,
            icons=config.icons,
            questions=services.questions,
        )
        changes = ToolChanges()
        server = _Server(
            SERVER_NAME,
            version=_version(),
            instructions=INSTRUCTIONS,
            cache_hints=CACHE_HINTS,
            on_list_tools=tools.list_tools,
            on_call_tool=tools.call_tool,
            on_subscriptions_listen=changes.listen,
        )
        store = services.mcp_tasks if services.mcp_tasks is not None else MemoryMcpTaskStore()
        identity = server.server_info_stamp
        task_runner = McpTasks(store, config.tasks, tools, identity=lambda: dict(identity))
        server.middleware += [approvals.boundary(SERVER_NAME), changes, task_runner]
        for method, params_type, handler in task_runner.methods():
            server.add_request_handler(method, params_type, handler)
        server.extensions[EXTENSION] = {}
        for extra in self._extras:
            extra(server)
        manager = SessionManager(
            server,
            event_store=StreamEvents(),
            retry_interval=RETRY_MS,
            max_request_body_size=max_body_bytes,
        )
        stop_watching = services.registry.on_change(changes.registry_changed)
        try:
            async with manager.run(), changes.delivering(), task_runner.running():
                self._manager = manager
                try:
                    yield
                finally:
                    self._manager = None
        finally:
            stop_watching()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if manager is None:
            await _refuse(send, 503, "the proxy is not ready")
            return
        refusal = self._hosts.refusal(context_of(scope).headers, scope.get("server"))
        if refusal is not None:
            await _refuse(send, 403, refusal)
            return
        principal = context_of(scope).principal
        if principal is not None:
            # The SDK binds a session to the credential that opened it: another key gets
            # 404 for it, as if it did not exist.
            token = AccessToken(token="", client_id=principal.name, scopes=[])
            scope["user"] = AuthenticatedUser(token)
        await manager.handle_request(scope, receive, send)  # type: ignore[arg-type]


class _Server(Server[object]):
    """The SDK's server, telling handshake clients that its tool list can change (2026-07-28
    clients learn it from `subscriptions/listen` being served)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, object]] | None = None,
        extensions: dict[str, dict[str, object]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(tools_changed=True)
        return super().create_initialization_options(options, experimental_capabilities, extensions)

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        """The SDK's capabilities, with 2025-11-25's `tasks` (tasks/list, tasks/cancel,
        task-augmented tools/call) for handshake clients; 2026-07-28 clients see the tasks
        extension under `extensions`."""
        capabilities = super().get_capabilities(
            notification_options,
            experimental_capabilities,
            extensions,
            protocol_version=protocol_version,
        )
        if protocol_version in MODERN_PROTOCOL_VERSIONS:
            return capabilities
        tasks = types.ServerTasksCapability(
            list=types.TasksListCapability(),
            cancel=types.TasksCancelCapability(),
            requests=types.ServerTasksRequestsCapability(
                tools=types.TasksToolsCapability(call=types.TasksCallCapability())
            ),
        )
        return capabilities.model_copy(update={"tasks": tasks})


async def _refuse(send: Send, status: int, message: str) -> None:
    """A JSON-RPC error body without an id, as the SDK answers transport-level refusals."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    await send_json(send, status, body)


@functools.cache  # the package's metadata (its README included) is parsed on each ask
def _version() -> str:
    try:
        return importlib.metadata.version("toolwire")
    except importlib.metadata.PackageNotFoundError:
        return ""
