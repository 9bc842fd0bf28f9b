"""One persistent MCP client session per server: connect, list, call, follow changes, reconnect.

This is the one module that drives the `mcp` client SDK's session; its exceptions are mapped here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Literal, cast

import anyio
import mcp_types as types
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client._transport import TransportStreams, WriteStream
from mcp.client.session import MessageHandlerFnT
from mcp.client.sse import sse_client
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from registry.mcp.config import McpServerConfig
from registry.mcp.elicitation import ClientRequests
from registry.mcp.errors import McpCallError, McpConnectionLostError, McpUnavailableError
from registry.mcp.http_transports import own_http, streamable_http_streams, traced_http_client
from registry.mcp.lean_calls import LeanCalls
from registry.mcp.listing import list_all
from registry.mcp.oauth import SourceAuth, source_auth
from registry.mcp.progress import CallReporter, ProgressRoutes
from registry.mcp.stderr import ServerStderr
from registry.mcp.stdio import stdio_transport
from registry.mcp.task_handles import TaskHandles
from registry.mcp.tasks import TaskCalls
from registry.mcp.watched_reader import WatchedReader
from registry.propagation import outgoing_trace_headers

__all__ = ["McpSession"]

log = logging.getLogger("toolwire.mcp")

State = Literal["idle", "connecting", "connected", "backoff", "closed"]
ToolsCallback = Callable[[list[types.Tool]], None]

INITIAL_BACKOFF_S = 0.25
MAX_BACKOFF_S = 30.0
STABLE_AFTER_S = 30.0
"""A connection that stayed up this long resets the backoff to its initial delay."""
_PYTHON_NAMES = ("python", "python3")
_CLIENT_INFO = types.Implementation(name="toolwire", version="0.1.0")
# A terminated Streamable HTTP session answers with this code and message: reconnect.
_SESSION_TERMINATED = (types.INVALID_REQUEST, "Session terminated")


class McpSession:
    """A client session to one MCP server, kept open and re-opened with backoff after failures.

    A background task owns the connection (the SDK's transports are anyio task groups that
    must be entered and left by one task); `start` creates it, `aclose` cancels and awaits it.
    """

    def __init__(
        self,
        server: McpServerConfig,
        *,
        label: str,
        base_dir: Path,
        on_tools: ToolsCallback,
        requests: ClientRequests | None = None,
    ) -> None:
        self._server = server
        self._requests = requests
        self._label = label
        self._base_dir = base_dir
        self._progress = ProgressRoutes()
        self._tasks = TaskCalls(label)
        self._handles = TaskHandles(label)
        self._on_tools = self._tasks.following(on_tools)
        self._state: State = "idle"
        self._error: str | None = None
        self._session: ClientSession | None = None
        self._lean: LeanCalls | None = None
        self._lost: anyio.Event | None = None
        self._attempt_done = asyncio.Event()
        self._ready = asyncio.Event()
        self._scope = anyio.CancelScope()
        self._task: asyncio.Task[None] | None = None
        self._auth: SourceAuth | None = None

    @property
    def connected(self) -> bool:
        """Whether a session is open, initialized and not known to be lost."""
        return self._ready.is_set()

    @property
    def error(self) -> str | None:
        """Why the last connection attempt failed or the last connection ended."""
        return self._error

    @property
    def state(self) -> State:
        return self._state

    async def start(self) -> None:
        """Start the connection task and wait for its first attempt to finish.

        Raises:
            McpUnavailableError: the first attempt failed (the task keeps retrying).
        """
        if self._task is None:
            self._task = asyncio.create_task(self._supervise(), name=f"mcp:{self._label}")
        await self._attempt_done.wait()
        if not self._ready.is_set():
            raise McpUnavailableError(f"MCP server {self._label}: {self._error}")

    async def wait_connected(self) -> None:
        """Wait until a session is open (no timeout: the caller bounds it)."""
        if self._state == "closed":
            raise McpUnavailableError(f"MCP server {self._label} is closed")
        await self._ready.wait()

    async def aclose(self) -> None:
        """Close the session and stop a stdio server (its whole process group)."""
        self._scope.cancel()
        if self._task is not None:
            await asyncio.wait({self._task})
        self._state = "closed"

    async def call_tool(
        self, name: str, arguments: dict[str, Any], reporter: CallReporter | None = None
    ) -> types.CallToolResult:
        """Call a tool once; it is never re-sent, whatever happens to the connection. Its
        progress goes to `reporter`; a tool that runs as a task is called as one.

        Raises:
            McpUnavailableError: the server is not connected.
            McpConnectionLostError: the connection died during the call.
            McpCallError: the server answered with a protocol error or an unusable result.
        """
        if not self._ready.is_set() and self._state == "connecting":
            # A (re)connection is under way: worth waiting for, within the call's deadline.
            await self._attempt_done.wait()
        session = self._session if self._ready.is_set() else None
        lean = self._lean
        if session is None:
            raise McpUnavailableError(
                f"MCP server {self._label} is not connected ({self._error or 'not started'}); "
                "it is being reconnected in the background"
            )
        try:
            # The caller's trace context (empty unless traced): in `_meta`, and as headers.
            meta = cast("types.RequestParamsMeta", dict(outgoing_trace_headers()))
            with self._progress.token(reporter) as token:
                meta["progress_token"] = token
                if self._tasks.runs_as_task(name):
                    result = await self._call_as_task(session, name, arguments, meta, reporter)
                elif lean is not None:  # a 2025-era session: no task handles to follow
                    result = await self._call(session, name, arguments, meta, lean)
                else:
                    call = self._call(session, name, arguments, meta)
                    result = await self._handles.settled(session, call, reporter)
        except MCPError as exc:
            if (
                exc.code == types.CONNECTION_CLOSED
                or (exc.code, exc.message) == _SESSION_TERMINATED
            ):
                self._mark_lost()
                raise McpConnectionLostError(
                    f"the connection to MCP server {self._label} was lost during the call "
                    f"({exc.message}); the call was not retried and may or may not have run"
                ) from exc
            if self._auth is not None and self._auth.failure is not None:
                raise McpCallError(f"MCP server {self._label}: {self._auth.failure}") from exc
            raise McpCallError(f"MCP error {exc.code}: {exc.message}") from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self._mark_lost()
            raise McpConnectionLostError(
                f"the connection to MCP server {self._label} was lost during the call"
            ) from exc
        except (RuntimeError, ValidationError) as exc:
            # The SDK raises RuntimeError for results it rejects (structured content that does
            # not match the output schema, an input-required result).
            raise McpCallError(f"unusable result from MCP server {self._label}: {exc}") from exc
        if not isinstance(result, types.CallToolResult):
            raise McpCallError(f"unexpected result type {type(result).__name__}")
        return result

    async def _call(
        self,
        session: ClientSession,
        name: str,
        arguments: dict[str, Any],
        meta: types.RequestParamsMeta | None,
        lean: LeanCalls | None = None,
    ) -> types.CallToolResult:
        """One call, its server's questions and completion requests answered meanwhile (on a
        2025-era session on Toolwire's own transport by `lean`, beside the SDK's session)."""
        requests = self._requests
        key = meta.get("progress_token") if meta is not None else None
        if lean is not None and meta is not None:
            if requests is None:
                return await lean.call(session, name, arguments, meta)
            with requests.calling(name, None if key is None else str(key)):
                return await lean.call(session, name, arguments, meta)
        if requests is None:
            return await session.call_tool(name, arguments, meta=meta)
        with requests.calling(name, None if key is None else str(key)) as call:

            async def retry(
                responses: types.InputResponses, state: str | None
            ) -> types.CallToolResult | types.InputRequiredResult:
                return await session.call_tool(
                    name,
                    arguments,
                    meta=meta,
                    input_responses=responses,
                    request_state=state,
                    allow_input_required=True,
                )

            first = await session.call_tool(name, arguments, meta=meta, allow_input_required=True)
            return await requests.settle(call, first, retry)

    async def _call_as_task(
        self,
        session: ClientSession,
        name: str,
        arguments: dict[str, Any],
        meta: types.RequestParamsMeta,
        reporter: CallReporter | None,
    ) -> types.CallToolResult:
        """A call run as a task, the server's questions meanwhile going to its caller."""
        with contextlib.nullcontext() if self._requests is None else self._requests.calling(name):
            return await self._tasks.call(session, name, arguments, meta, reporter)

    def _mark_lost(self) -> None:
        # Calls fail fast from here on; the supervisor tears the connection down and retries.
        self._ready.clear()
        if self._lost is not None:
            self._lost.set()

    async def _supervise(self) -> None:
        failures = 0
        with self._scope:
            while True:
                self._state = "connecting"
                up_for = 0.0
                try:
                    up_for = await self._connect_and_serve()
                except Exception as exc:
                    # The connection boundary: whatever broke (spawn, network, handshake,
                    # listing), the answer is the same: record it and try again later.
                    failure = self._auth.failure if self._auth is not None else None
                    self._error = failure or _describe(exc)
                    log.warning("MCP server %s: %s", self._label, self._error)
                finally:
                    self._ready.clear()
                    self._session = self._lean = None
                    self._lost = None
                    self._attempt_done.set()
                self._attempt_done = asyncio.Event()
                failures = 0 if up_for >= STABLE_AFTER_S else failures + 1
                delay = min(MAX_BACKOFF_S, INITIAL_BACKOFF_S * 2 ** max(failures - 1, 0))
                log.info("MCP server %s: reconnecting in %.2fs", self._label, delay)
                self._state = "backoff"
                if self._auth is None:
                    await anyio.sleep(delay)
                else:  # awaiting a login: connect as soon as any replica keeps one
                    await self._auth.until_login(delay)
        self._state = "closed"

    async def _connect_and_serve(self) -> float:
        """Connect, initialize, list and serve until the connection is lost; returns its uptime.

        Raises:
            McpUnavailableError: a stdio server could not be started, or stopped before it
                answered (with what it wrote to stderr last).
        """
        if self._server.kind != "stdio":
            return await self._serve(self._transport())
        stderr = ServerStderr(self._label)
        try:
            up_for = await self._serve(self._stdio(stderr))
        except Exception as exc:
            raise McpUnavailableError(self._stdio_failure(exc, stderr)) from exc
        if stderr.lines:
            self._error = f"{self._error}; {stderr.summary()}"
        return up_for

    def _stdio_failure(self, exc: BaseException, stderr: ServerStderr) -> str:
        """Why a stdio server did not come up, in the user's terms."""
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        parameters = self._stdio_parameters()
        if isinstance(exc, OSError) and not stderr.lines:
            # The spawn failed (uvloop's errors name no file: the command is named here).
            cwd = Path(parameters.cwd or ".")
            if isinstance(exc, FileNotFoundError) and not cwd.is_dir():
                return f"cannot start {parameters.command}: no such working directory: {cwd}"
            reason = exc.strerror or str(exc)
            if isinstance(exc, FileNotFoundError):
                return f"command not found: {parameters.command} ({reason})"
            return f"cannot start {parameters.command}: {reason}"
        if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
            ended = "exited" if stderr.ended else "closed its output"
            return f"{self._server.label()} {ended} before the MCP handshake; {stderr.summary()}"
        reason = _describe(exc)
        return f"{reason}; {stderr.summary()}" if stderr.lines else reason

    async def _serve(
        self, transport: contextlib.AbstractAsyncContextManager[TransportStreams]
    ) -> float:
        lost = self._lost = anyio.Event()
        changes = asyncio.Event()
        up_since = anyio.current_time()
        with anyio.CancelScope() as connecting:
            connecting.deadline = anyio.current_time() + self._server.connect_timeout_s
            async with transport as (read, write):
                lean = self._lean_calls(write)
                watched = WatchedReader(read, self._mark_lost, lean)
                requests = self._requests
                async with ClientSession(
                    watched,
                    write,
                    message_handler=self._handler(changes),
                    client_info=_CLIENT_INFO,
                    elicitation_callback=requests.elicit if requests is not None else None,
                    sampling_callback=requests.sample if requests is not None else None,
                    notification_bindings=[self._tasks.binding()],
                    extensions=self._handles.extensions(),
                    result_claims=self._handles.claims(),
                ) as session:
                    if self._server.protocol == "2026-07-28":
                        await session.discover()
                    else:
                        await session.initialize()
                    self._tasks.learn_server(session.server_capabilities)
                    tools = await list_all(session)
                    connecting.deadline = math.inf
                    up_since = anyio.current_time()
                    self._on_tools(tools)
                    self._session, self._error = session, None
                    self._lean = lean if lean is not None and lean.serves(session) else None
                    self._state = "connected"
                    self._ready.set()
                    self._attempt_done.set()
                    log.info("MCP server %s: connected, %d tools", self._label, len(tools))
                    async with anyio.create_task_group() as relisting:
                        relisting.start_soon(self._relist, session, changes)
                        await lost.wait()
                        relisting.cancel_scope.cancel()
                    self._session = self._lean = None
        if connecting.cancelled_caught:
            raise TimeoutError(f"no answer within {self._server.connect_timeout_s:g}s")
        self._error = "the connection was lost"
        log.warning("MCP server %s: connection lost", self._label)
        return anyio.current_time() - up_since

    def _lean_calls(self, write: WriteStream[SessionMessage]) -> LeanCalls | None:
        """The lean path's calls on Toolwire's own transports (`lean_calls`): stdio, and
        Streamable HTTP without OAuth or a proxy (on `http1`; such a source keeps the SDK's
        client, whose answers are validated before the session sees them)."""
        kind = self._server.kind
        if kind == "stdio":
            return LeanCalls(write)
        if kind == "streamable-http" and own_http(self._server.url, self._auth):
            return LeanCalls(write, stamped=True)
        return None

    def _handler(self, changes: asyncio.Event) -> MessageHandlerFnT:
        async def handle(message: types.ServerNotification | Exception) -> None:
            # Handled whether or not the server advertised tools.listChanged: some send it anyway.
            if isinstance(message, types.ProgressNotification):
                self._progress.progress(message.params)
            elif isinstance(message, types.ToolListChangedNotification):
                changes.set()
            elif isinstance(message, Exception):
                log.debug("MCP server %s: transport error: %s", self._label, message)

        return handle

    async def _relist(self, session: ClientSession, changes: asyncio.Event) -> None:
        while True:
            await changes.wait()
            changes.clear()
            try:
                tools = await list_all(session)
            except (MCPError, TimeoutError, ValidationError) as exc:
                log.warning("MCP server %s: re-listing tools failed: %s", self._label, exc)
                continue
            self._on_tools(tools)

    @contextlib.asynccontextmanager
    async def _stdio(self, stderr: ServerStderr) -> AsyncIterator[TransportStreams]:
        async with (
            stderr.capture() as errlog,
            stdio_transport(self._stdio_parameters(), errlog) as streams,
        ):
            errlog.close()  # the server has its own copy; ours would keep the pipe from ending
            yield streams

    def _transport(self) -> contextlib.AbstractAsyncContextManager[TransportStreams]:
        """The transport of an HTTP server."""
        server = self._server
        headers = dict(server.headers)
        if server.bearer_token_env is not None:
            token = os.environ.get(server.bearer_token_env)
            if not token:
                raise McpUnavailableError(
                    f"environment variable {server.bearer_token_env} is not set"
                )
            headers["Authorization"] = f"Bearer {token}"
        assert server.url is not None
        if server.oauth is not None and self._auth is None:
            self._auth = source_auth(server.url, server.oauth, label=self._label)
        if server.kind == "sse":
            return sse_client(
                server.url,
                headers=headers,
                timeout=server.connect_timeout_s,
                auth=self._auth,
                httpx_client_factory=traced_http_client,
            )
        origins = self._requests.origins if self._requests is not None else None
        return streamable_http_streams(
            server.url, headers, server.connect_timeout_s, origins, self._auth
        )

    def _stdio_parameters(self) -> StdioServerParameters:
        command, *args = self._server.argv
        if command in _PYTHON_NAMES:
            # The interpreter Toolwire runs under, so servers installed next to it are found.
            command = sys.executable
        elif "/" in command and not Path(command).is_absolute():
            command = str((self._base_dir / command).resolve())
        # Relative to the config's folder, like every path in proxy.yaml (default: that folder).
        cwd = self._base_dir / Path(self._server.cwd or ".").expanduser()
        return StdioServerParameters(
            command=command, args=args, env=dict(self._server.env) or None, cwd=str(cwd)
        )


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, McpUnavailableError):
        return str(exc)
    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}: {exc.message}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
