"""The Streamable HTTP transport of an MCP session on Toolwire's own HTTP/1.1 client
(`registry.http1`): each message POSTed by the task that sends it (a wrapped library cost).

The mcp SDK's `streamable_http_client` runs on httpx and anyio: each message sent crosses a
memory stream to a writer task, which starts a task per request; that task POSTs through
httpx's auth, redirect and hook layers and httpcore's anyio streams, and hands each message
of the answer to the session through a second memory stream; every answer is validated as a
JSON-RPC message before the session validates its result again. A tool-loop request calling
an MCP tool over HTTP counted 6.7 M instructions against 2.2 M for a Python tool; with this
transport on aiohttp, 3.4 M, and 2.1 M (0.82x) -> 1.7 M moving it onto `http1`
(`bench/instructions.py --flow tool-loop --kind mcp-http`). Here `send` POSTs the message on
`http1` (the client of the model calls and OpenAPI operations) in the sending task, reads the
answer (JSON, or an event stream that may carry notifications and the server's own requests
before the response) and queues its messages for `receive`, which the session's receive loop
reads (or hands a lean call its plain result at once, `Inbox.claimed`); an answer to a
request is taken as it is, its result left to the session, and any other message is
validated as the SDK validates it. The messages that came before an answer (progress, a
question) are handled by the session's tasks before the answer ends the call, as they were
when each message took a task switch.

What the SDK's client does, this does too: `Accept: application/json, text/event-stream`;
the `mcp-session-id` the server gives at `initialize`, and the negotiated
`mcp-protocol-version`, sent with every later request; the headers the session stamps on a
message; the GET stream for the server's own messages, started after `initialized` (a server
that answers 405 has none; a broken one is opened again twice, as the SDK does), and a DELETE
of the session on close; a request answered 202 or with an unexpected content type, a 404
(session expired: "Session terminated"), another 4xx/5xx (with the JSON-RPC error in its body
when it has one) and an event stream that ends before its response all resolve the request
with the SDK's error; redirects are followed only within the endpoint's origin (307/308 for a
POST); an event stream that ends early is resumed with `Last-Event-ID` when its events had
ids; at 2026-07-28 a `notifications/cancelled` is not sent (the aborted POST is the signal:
a request cancelled mid-answer closes its connection). A connection that fails (refused,
reset, timed out) fails its request with `CONNECTION_CLOSED` and the reason, and ends the
transport, as the SDK's task group does when a POST raises; a GET or DELETE whose pooled
connection died before any answer is sent once more (a POST is not: it may have arrived).

Beyond the SDK: a `tools/call`'s trace context goes in headers too (it is in its `_meta`),
and each server request on a call's stream is noted in `Origins` with the call's progress
token (the httpx hooks `registry.mcp.http_transports` gives the SDK's client do the same).
The rest of an answer's stream, after its response (its end comes a moment later), is read
before the request returns (`Response.finish`, at most `DRAIN_S`), so its connection is back
in the pool for the next call, as `registry.mcp.keepalive` does for httpx; a close waits at
most `TERMINATE_S` for the DELETE.

Not here: OAuth (its provider is an httpx `Auth` flow) and proxies (`http1` knows none): a
source with `oauth:`, or one the environment proxies, keeps the SDK's client
(`http_transports.py`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
import orjson
from anyio.abc import TaskGroup
from mcp.client._transport import TransportStreams
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from registry import http1
from registry.mcp.event_stream import EventStream, EventTooLong
from registry.mcp.http_answers import (
    content_type,
    failure_reason,
    header,
    is_events,
    message_or_error,
    plain_result,
    redirect,
    session_message,
)
from registry.mcp.http_requests import request_body, trace_headers
from registry.mcp.inbox import Inbox
from registry.mcp.keepalive import DRAIN_S
from registry.mcp.origins import Origins
from registry.mcp.pool import KEEPALIVE_S, MAX_CONNECTIONS
from registry.mcp.transport_streams import TransportWriter

__all__ = ["READ_TIMEOUT_S", "TERMINATE_S", "streamable_http_transport"]

log = logging.getLogger("toolwire.mcp")

READ_TIMEOUT_S = 300.0
"""The longest silence on an answer: a server may hold a call's stream open while a tool runs."""
GET_ATTEMPTS = 2
"""How often a broken GET stream, or an unfinished answer, is opened again (the SDK's count)."""
RETRY_MS = 1000
"""The wait before opening a stream again when the server named none (the SDK's)."""
TERMINATE_S = 2.0
"""The longest a close waits for the server to take the session's DELETE (a close that was
cancelled still sends it)."""
MAX_REDIRECTS = 5
SESSION_ID = "mcp-session-id"
LAST_EVENT_ID = "last-event-id"
_ACCEPT = "application/json, text/event-stream"
_OWN = frozenset({"accept", "content-type", SESSION_ID, MCP_PROTOCOL_VERSION_HEADER})
"""The headers the transport sets on every request (a source's own of these names yield)."""
_ASKS = ("elicitation/create", "sampling/createMessage")
"""The server requests whose call `Origins` is told (those that ask the call's caller)."""
_NOT_SENT = "the message was not sent: the connection to the MCP server failed"
_ERRORS = (http1.HTTPError, OSError, TimeoutError)
"""What a request or a read on `http1` raises when the connection fails."""


@contextlib.asynccontextmanager
async def streamable_http_transport(
    url: str,
    headers: dict[str, str],
    timeout_s: float,
    origins: Origins | None = None,
    *,
    max_event_bytes: int,
) -> AsyncIterator[TransportStreams]:
    """Yield the session's read and write streams to the MCP server at `url`, each request
    carrying `headers`; connecting is bounded by `timeout_s`, an answer's silences by
    `READ_TIMEOUT_S` (or `timeout_s`, if longer). On exit the session is deleted (within
    `TERMINATE_S`)."""
    # The pool's bounds of the httpx client (`registry.mcp.pool`): every connection kept.
    pool = http1.Pool(limit=MAX_CONNECTIONS, connect_timeout_s=timeout_s, keepalive_s=KEEPALIVE_S)
    try:
        async with anyio.create_task_group() as tasks:
            idle_s = max(READ_TIMEOUT_S, timeout_s)
            link = _Link(url, pool, headers, idle_s, tasks, origins, max_event_bytes)
            try:
                yield link.inbox, _Writer(link)
            finally:
                link.closed = True
                tasks.cancel_scope.cancel()
                with anyio.CancelScope(shield=True), anyio.move_on_after(TERMINATE_S):
                    await link.terminate()
    finally:
        await pool.aclose()


class _Writer(TransportWriter):
    """The session's write stream: each message POSTed by its sender."""

    def __init__(self, link: _Link) -> None:
        self._link = link
        self._closed = False

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        await self._link.post(item)

    async def aclose(self) -> None:
        self._closed = True


class _Failed(Exception):
    """The connection failed: the reason, in the user's terms."""


class _Link:
    """One MCP session's HTTP side: its endpoint, its pool, its session id and version."""

    def __init__(
        self,
        url: str,
        pool: http1.Pool,
        headers: dict[str, str],
        idle_s: float,
        tasks: TaskGroup,
        origins: Origins | None,
        max_event_bytes: int,
    ) -> None:
        self.url = url
        self.inbox = Inbox()
        self._pool = pool
        self._base = {k: v for k, v in headers.items() if k.lower() not in _OWN}
        self._base |= {"accept": _ACCEPT, "content-type": "application/json"}
        self._idle_s = idle_s
        self._tasks = tasks
        self._origins = origins
        self._max_event_bytes = max_event_bytes
        self._session_id: str | None = None
        self._version: str | None = None
        self._stamped: dict[str, str] | None = None
        """Every request's headers (the source's, ours, the session's), made once."""
        self._broken = False
        self.closed = False
        """The transport is being left: nothing more is sent but its DELETE."""

    def _headers(self) -> dict[str, str]:
        """Every request's headers (not to be changed: a copy takes more)."""
        headers = self._stamped
        if headers is None:
            headers = dict(self._base)
            if self._session_id:
                headers[SESSION_ID] = self._session_id
            if self._version:
                headers[MCP_PROTOCOL_VERSION_HEADER] = self._version
            self._stamped = headers
        return headers

    def _learn(self, session_id: str | None, version: str | None) -> None:
        if (session_id, version) != (self._session_id, self._version):
            self._session_id, self._version, self._stamped = session_id, version, None

    async def post(self, item: SessionMessage) -> None:
        """Send one message; a request's answer is queued for the session before this returns.

        Raises:
            anyio.ClosedResourceError: the transport is being left.
            anyio.BrokenResourceError: the connection failed before, or it failed now and
                the message was not a request (a request is answered with the reason).
        """
        if self.closed:
            raise anyio.ClosedResourceError
        if self._broken:
            raise anyio.BrokenResourceError(_NOT_SENT)
        message = item.message
        request = message if isinstance(message, types.JSONRPCRequest) else None
        metadata = item.metadata if isinstance(item.metadata, ClientMessageMetadata) else None
        stamp = metadata.headers if metadata is not None else None
        if request is not None and request.method == "initialize":
            self._learn(self._session_id, None)  # the negotiation: no version from before it
        elif stamp:
            self._learn(self._session_id, stamp.get(MCP_PROTOCOL_VERSION_HEADER, self._version))
        if self._swallowed(message):
            return
        headers = self._headers()
        token = None
        if stamp or request is not None:
            headers = {**headers, **stamp} if stamp else dict(headers)
            if request is not None:
                token = trace_headers(request, headers)
        body = request_body(message)
        try:
            response = await self._send("POST", headers, body)
            try:
                await self._answered(response, message, request, token)
                await response.finish(DRAIN_S)
            except BaseException:
                response.close()  # a request given up mid-answer: the server sees it go
                raise
        except _Failed as exc:
            self._break(request, str(exc))
            if request is None:
                raise anyio.BrokenResourceError(str(exc)) from exc
            return
        if isinstance(message, types.JSONRPCNotification) and (
            message.method == "notifications/initialized" and self._session_id
        ):
            self._tasks.start_soon(self._listen)

    def _swallowed(self, message: types.JSONRPCMessage) -> bool:
        """A cancellation at 2026-07-28: no message on the wire (the abandoned request's
        POST was aborted with its sender, which is the signal)."""
        return (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
            and self._version in MODERN_PROTOCOL_VERSIONS
        )

    async def _send(
        self, method: str, headers: dict[str, str], body: bytes = b""
    ) -> http1.Response:
        """One request, its answer's head read; redirects are followed within the endpoint's
        origin (307/308 only for a POST, which must keep its method and body). A GET or
        DELETE whose pooled connection died before any answer is sent once more. The caller
        closes or releases the response.

        Raises:
            _Failed: the connection failed (refused, reset, no answer in time).
        """
        url = self.url
        verb = method.encode()
        idle_s = self._idle_s
        try:
            for _ in range(MAX_REDIRECTS):
                try:
                    response = await self._pool.request(verb, url, headers, body, idle_s=idle_s)
                except http1.Disconnected as exc:
                    if exc.answered or method == "POST":
                        raise
                    response = await self._pool.request(verb, url, headers, body, idle_s=idle_s)
                if response.status < 300 or response.status >= 400:
                    return response
                location = redirect(response.status, response.headers, url, method)
                if location is None:
                    return response
                response.release()
                url = location
            return response
        except (*_ERRORS, ValueError) as exc:
            raise _Failed(failure_reason(exc, url)) from exc

    async def _answered(
        self,
        response: http1.Response,
        message: types.JSONRPCMessage,
        request: types.JSONRPCRequest | None,
        token: str | None,
    ) -> None:
        """Queue what answers `message` (a request's response, or the error standing for it)."""
        status = response.status
        if request is None:
            if status >= 400:
                log.debug("MCP server answered %s with %d", type(message).__name__, status)
            return  # a notification's or a response's answer says nothing (202)
        if status == 202:
            reason = "server answered a request with 202 Accepted"
            return self._resolve(request, reason, types.INVALID_REQUEST)
        if 300 <= status < 400:
            location = response.headers.get("location", "")
            reason = f"Redirect to {location} not followed; use that URL as the endpoint"
            return self._resolve(request, reason, types.INVALID_REQUEST)
        if status >= 400:
            return await self._refused(response, request)
        if request.method == "initialize":
            session_id = header(response, b"mcp-session-id", b"Mcp-Session-Id")
            self._learn(session_id or self._session_id, self._version)
        kind = content_type(response)
        if kind.startswith("application/json"):
            try:
                data = await response.read()
            except _ERRORS as exc:
                raise _Failed(failure_reason(exc, self.url)) from exc
            try:
                answer = orjson.loads(data)
                if not self._claimed(answer, request.id):
                    self.inbox.put(session_message(answer, request.id))
            except ValueError as exc:  # orjson's JSONDecodeError too
                self._resolve(request, f"Failed to parse JSON response: {exc}", types.PARSE_ERROR)
        elif kind.startswith("text/event-stream"):
            await self._stream(response, request, token)
        else:
            self._resolve(request, f"Unexpected content type: {kind}", types.INVALID_REQUEST)

    async def _refused(self, response: http1.Response, request: types.JSONRPCRequest) -> None:
        """A 4xx/5xx: the JSON-RPC error in its body, or the SDK's stand-in for its status."""
        if content_type(response).startswith("application/json"):
            with contextlib.suppress(*_ERRORS, orjson.JSONDecodeError, ValueError):
                error = types.JSONRPCError.model_validate(orjson.loads(await response.read()))
                self.inbox.put(SessionMessage(error.model_copy(update={"id": request.id})))
                return
        if response.status == 404 and self._session_id is not None:
            self._resolve(request, "Session terminated", types.INVALID_REQUEST)
        elif response.status == 404:
            self._resolve(request, "Not Found", types.METHOD_NOT_FOUND)
        else:
            self._resolve(request, "Server returned an error response", types.INTERNAL_ERROR)

    async def _stream(
        self, response: http1.Response, request: types.JSONRPCRequest, token: str | None
    ) -> None:
        """A request's event stream up to its response, resumed (GET with `Last-Event-ID`)
        when it ends early and its events had ids. `response` stays the caller's to close;
        a resumed stream's answer is closed here."""
        events = EventStream(self._max_event_bytes)
        for attempt in range(GET_ATTEMPTS + 1):
            if attempt:
                if events.last_id is None:
                    break
                await anyio.sleep((events.retry_ms or RETRY_MS) / 1000)
                resumed = await self._resume(events.last_id)
                if resumed is None:
                    continue
                response, events = resumed, EventStream(self._max_event_bytes, events)
            try:
                answered = await self._read(response, events, request, token, not attempt)
            except EventTooLong as exc:
                self._resolve(request, f"SSE stream failed: {exc}")
                answered = True
            except _ERRORS as exc:
                log.debug("MCP event stream ended: %s", failure_reason(exc, self.url))
                answered = False
            finally:
                if attempt:
                    response.close()
            if answered:
                return
        self._resolve(request, "SSE stream ended without a response")

    async def _resume(self, last_id: str) -> http1.Response | None:
        """The rest of a request's event stream after the event `last_id`, or None."""
        try:
            response = await self._send("GET", self._headers() | {LAST_EVENT_ID: last_id})
        except _Failed as exc:
            log.debug("MCP event stream not resumed: %s", exc)
            return None
        if response.status < 300 and is_events(response):
            return response
        log.debug("MCP event stream not resumed: %d", response.status)
        response.close()
        return None

    async def _read(
        self,
        response: http1.Response,
        events: EventStream,
        request: types.JSONRPCRequest,
        token: str | None,
        first: bool,
    ) -> bool:
        """Queue the stream's messages; True once its response came (the rest of the stream
        is read when the response is finished, so its connection is kept). A response that
        is the `first` stream's first message may go straight to its call."""
        inbox = self.inbox
        while chunk := await response.read_any():
            for data in events.feed(chunk):
                try:
                    answer = orjson.loads(data)
                    if first and self._claimed(answer, request.id):
                        return True
                    item = session_message(answer, request.id)
                except ValueError as exc:  # orjson's JSONDecodeError too
                    log.warning("MCP server sent an invalid message: %s", exc)
                    reason = f"Failed to parse SSE message: {exc}"
                    self._resolve(request, reason, types.PARSE_ERROR)
                    return True
                message = item.message
                inbox.put(item)
                if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                    return True
                if message.__class__ is types.JSONRPCRequest and message.method in _ASKS:
                    self._asked(message.id, token)
                first = False
        return False

    def _claimed(self, answer: Any, request_id: types.RequestId) -> bool:
        """Whether `answer`, a plain result, went straight to its call (`Inbox.claimed`)."""
        result = plain_result(answer)
        return result is not None and self.inbox.claimed(request_id, result)

    def _asked(self, request_id: types.RequestId, token: str | None) -> None:
        """A server request on a call's stream: `Origins` learns which call it came with."""
        if token is not None and self._origins is not None:
            self._origins.note(request_id, token)

    async def _listen(self) -> None:
        """The GET stream of the server's own messages, opened again if it breaks."""
        events: EventStream | None = None
        attempt = 0
        while attempt < GET_ATTEMPTS:
            headers = self._headers()
            if events is not None and events.last_id is not None:
                headers = headers | {LAST_EVENT_ID: events.last_id}
            try:
                response = await self._send("GET", headers)
                try:
                    if response.status == 405:
                        log.debug("MCP server %s has no GET stream", self.url)
                        return
                    if response.status >= 300 or not is_events(response):
                        raise _Failed(f"GET stream answered {response.status}")
                    events = EventStream(self._max_event_bytes, events)
                    while chunk := await response.read_any():
                        for data in events.feed(chunk):
                            self.inbox.put(message_or_error(data, None))
                finally:
                    response.close()
                attempt = 0
            except (_Failed, EventTooLong, *_ERRORS) as exc:
                log.debug("MCP GET stream failed: %s", exc)
                attempt += 1
            if attempt < GET_ATTEMPTS:
                retry = events.retry_ms if events is not None else None
                await anyio.sleep((retry or RETRY_MS) / 1000)

    async def terminate(self) -> None:
        """DELETE the session (when the server gave one); a failure is only logged."""
        if self._session_id is None or self._broken:
            return
        try:
            response = await self._send("DELETE", self._headers())
        except _Failed as exc:
            log.warning("MCP session termination failed: %s", exc)
            return
        try:
            with contextlib.suppress(*_ERRORS):
                await response.read()  # to its end: the connection closes with the pool
        finally:
            response.close()
        if response.status not in (200, 204, 405):
            log.warning("MCP session termination failed: %d", response.status)

    def _resolve(
        self, request: types.JSONRPCRequest, reason: str, code: int = types.CONNECTION_CLOSED
    ) -> None:
        """Answer `request` with an error (its response will not come)."""
        error = types.ErrorData(code=code, message=reason)
        self.inbox.put(
            SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request.id, error=error))
        )

    def _break(self, request: types.JSONRPCRequest | None, reason: str) -> None:
        """The connection failed: the request learns why, then the session that it ended."""
        log.warning("MCP server %s: %s", self.url, reason)
        if request is not None:
            self._resolve(request, reason)
        self._broken = True
        self.inbox.end()
