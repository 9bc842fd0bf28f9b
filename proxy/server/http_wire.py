"""uvicorn's httptools protocol, leaner per request (`LeanHttpTools`): the one module that
replaces parts of uvicorn's own (tests/proxy/server/test_http_wire.py fails when uvicorn
changes what it replaces).

What each request no longer pays, its behaviour kept:
- `ProxyHeadersMiddleware`, the coroutine frame uvicorn wraps around every app (its default
  `proxy_headers`), which every resumption of the request's task passed through: the
  protocol applies the same `X-Forwarded-For` and `X-Forwarded-Proto` rules, with the same
  trusted hosts (`FORWARDED_ALLOW_IPS`), where it builds the scope; the connection's peer is
  judged once per connection.
- The response's `send` as a coroutine: `LeanCycle.send` writes at once and hands back an
  awaitable that is already done (a coroutine only while the transport's buffer is full).
  Every header is still checked as uvicorn checks it, by one search over the names and one
  over the values, rather than two searches per header.
- Two writes for a response with a length: its head waits for its first body and both go
  out in one write (an event stream's head goes at once).
- A keep-alive timer armed after each response and cancelled by the next request: one timer
  per connection instead, re-armed when it fires before the connection has been idle for
  `timeout_keep_alive`.
- A timer per request on reading its body (`asgi.read_body`): the scope says when the whole
  body has arrived (`BODY_ARRIVED`), and reading it then needs none.
- An `asyncio.Event` per request for the body's arrival (`Signal`, a lighter one), and the
  small frames of uvicorn's callbacks (the task start, the flow control's resume) inline.
"""

from __future__ import annotations

import asyncio
import contextvars
import urllib.parse
from typing import Any

import httptools
from uvicorn.config import Config
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.protocols.http.httptools_impl import (
    HEADER_RE,
    HEADER_VALUE_RE,
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string
from uvicorn.server import ServerState

from .asgi import BODY_ARRIVED

Message = dict[str, Any]


class LeanHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol with the proxy headers applied in place and `LeanCycle`
    answering each request."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        app = self.app
        self._trusted: Any = None
        """uvicorn's trusted hosts, when the protocol applies the proxy headers itself."""
        if type(app) is ProxyHeadersMiddleware:
            self.app = app.app
            self._trusted = app.trusted_hosts
        self._proxied = False
        """Whether the connection's peer is trusted to name the client and scheme."""
        done = self._sent = self.loop.create_future()
        done.set_result(None)
        self._idle = False
        """Whether the connection waits for a request (its last response complete)."""
        self._idle_since = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        HttpToolsProtocol.connection_made(self, transport)
        trusted = self._trusted
        if trusted is not None:
            client = self.client
            self._proxied = (client[0] if client else None) in trusted

    def data_received(self, data: bytes) -> None:
        self._idle = False  # the keep-alive timer, when it fires, leaves the connection open
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.parse_failed(exc)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()

    def parse_failed(self, exc: httptools.HttpParserError) -> None:
        """The request could not be parsed: uvicorn's 400, and the connection closed."""
        msg = "Invalid HTTP request received."
        self.logger.warning(msg)
        self.send_400_response(msg)

    def on_headers_complete(self) -> None:
        parser = self.parser
        scope: Any = self.scope
        http_version = parser.get_http_version()
        scope["method"] = parser.get_method().decode("ascii")
        if http_version != "1.1":
            scope["http_version"] = http_version
        if parser.should_upgrade() and self._should_upgrade():
            return
        parsed_url = httptools.parse_url(self.url)
        raw_path = parsed_url.path
        path = raw_path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        root_path = self.root_path
        if root_path:
            scope["path"] = root_path + path
            scope["raw_path"] = root_path.encode("ascii") + raw_path
        else:
            scope["path"] = path
            scope["raw_path"] = raw_path
        scope["query_string"] = parsed_url.query or b""
        if self._proxied:
            _forwarded(scope, self.headers, self._trusted)

        limit = self.limit_concurrency
        if limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit):
            app = service_unavailable
            self.logger.warning("Exceeded concurrency limit.")
        else:
            app = self.app

        existing_cycle = self.cycle
        cycle = self.cycle = LeanCycle(
            scope=scope,
            transport=self.transport,
            flow=self.flow,
            logger=self.logger,
            access_logger=self.access_logger,
            access_log=self.access_log,
            default_headers=self.server_state.default_headers,
            message_event=Signal(self.loop),  # type: ignore[arg-type]
            expect_100_continue=self.expect_100_continue,
            keep_alive=http_version != "1.0" and parser.should_keep_alive(),
            on_response=self.on_response_complete,
        )
        cycle.sent = self._sent
        if existing_cycle is None or existing_cycle.response_complete:
            self._start_asgi_task(cycle, app)
        else:  # pipelined: it waits for the answer before it
            self.flow.pause_reading()
            self.pipeline.appendleft((cycle, app))

    def on_message_complete(self) -> None:
        cycle = self.cycle
        if (self.parser.should_upgrade() and self._should_upgrade()) or cycle.response_complete:
            return
        cycle.more_body = False
        cycle.scope[BODY_ARRIVED] = True  # type: ignore[literal-required]
        cycle.message_event.set()

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        run = cycle.run_asgi(app)
        if self.config.reset_contextvars:
            task = self.loop.create_task(run, context=contextvars.Context())
        else:
            task = self.loop.create_task(run)
        tasks = self.tasks
        task.add_done_callback(tasks.discard)
        tasks.add(task)

    def on_response_complete(self) -> None:
        self.server_state.total_requests += 1
        transport = self.transport
        if transport.is_closing():
            return
        flow = self.flow
        if flow.read_paused:
            flow.read_paused = False
            transport.resume_reading()
        if self.pipeline:
            self._idle = False
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
            return
        # One keep-alive timer per connection, re-armed when it fires early, rather than one
        # armed and cancelled per request.
        self._idle = True
        self._idle_since = self.loop.time()
        if self.timeout_keep_alive_task is None:
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

    def timeout_keep_alive_handler(self) -> None:
        """Close the connection once it has waited `timeout_keep_alive` for a request."""
        self.timeout_keep_alive_task = None
        if not self._idle or self.transport.is_closing():
            return  # a request came: its response arms the timer again
        left = self._idle_since + self.timeout_keep_alive - self.loop.time()
        if left > 0:
            self.timeout_keep_alive_task = self.loop.call_later(
                left, self.timeout_keep_alive_handler
            )
        else:
            self.transport.close()


class LeanCycle(RequestResponseCycle):
    """uvicorn's request-response cycle, whose `send` writes at once (see the module)."""

    sent: asyncio.Future[None]
    """An awaitable already done: what `send` returns when it has written."""
    _head = b""
    """A response head not yet written: it goes out with the first body."""

    def send(self, message: Message) -> Any:  # type: ignore[override]
        if self.disconnected:
            return self.sent
        if self.flow.write_paused:
            return self._send_when_writable(message)
        if not self.response_started:
            self._start(message)
            return self.sent
        if self.response_complete or message["type"] != "http.response.body":
            raise _unexpected(message, self.response_complete)
        # A body: every event of a stream comes here, in this one frame.
        body = message.get("body", b"")
        more_body = message.get("more_body", False)
        if self.scope["method"] == "HEAD":
            self.expected_content_length = 0
        elif self.chunked_encoding:
            if body:
                end = b"" if more_body else b"0\r\n\r\n"
                self.transport.write(b"%x\r\n%b\r\n%b" % (len(body), body, end))
            elif not more_body:
                self.transport.write(b"0\r\n\r\n")
        else:
            self._write_within_length(body)
        if not more_body:
            self._complete()
        return self.sent

    async def _send_when_writable(self, message: Message) -> None:
        await self.flow.drain()
        await self.send(message)

    def _start(self, message: Message) -> None:
        if message["type"] != "http.response.start":
            raise RuntimeError(
                f"Expected ASGI message 'http.response.start', but got '{message['type']}'."
            )
        self.response_started = True
        self.waiting_for_100_continue = False
        status_code = message["status"]
        headers = self.default_headers + list(message.get("headers", []))
        if self.access_log:
            scope: Any = self.scope
            self.access_logger.info(
                '%s - "%s %s HTTP/%s" %d',
                get_client_addr(scope),
                scope["method"],
                get_path_with_query_string(scope),
                scope["http_version"],
                status_code,
            )
        content = [STATUS_LINE[status_code]]
        names = []
        values = []
        has_connection_close = False
        for name, value in headers:
            names.append(name)
            values.append(value)
            name = name.lower()
            if name == b"content-length" and self.chunked_encoding is None:
                self.expected_content_length = int(value.decode())
                self.chunked_encoding = False
            elif name == b"transfer-encoding" and value.lower() == b"chunked":
                self.expected_content_length = 0
                self.chunked_encoding = True
            elif name == b"connection" and _closes(value):
                self.keep_alive = False
                has_connection_close = True
            content += (name, b": ", value, b"\r\n")
        # Each pattern matches one byte: one search over all the names (values) finds what a
        # search of each would.
        if HEADER_RE.search(b"".join(names)):
            raise RuntimeError("Invalid HTTP header name.")
        if HEADER_VALUE_RE.search(b"".join(values)):
            raise RuntimeError("Invalid HTTP header value.")
        if not self.keep_alive and not has_connection_close:
            content.append(b"connection: close\r\n")
        if (
            self.chunked_encoding is None
            and self.scope["method"] != "HEAD"
            and status_code not in (204, 304)
        ):
            self.chunked_encoding = True
            content.append(b"transfer-encoding: chunked\r\n")
        content.append(b"\r\n")
        if self.chunked_encoding is False and self.scope["method"] != "HEAD":
            self._head = b"".join(content)  # its body follows: one write for both
        else:
            self.transport.write(b"".join(content))

    def _write_within_length(self, body: bytes) -> None:
        num_bytes = len(body)
        if num_bytes > self.expected_content_length:
            raise RuntimeError("Response content longer than Content-Length")
        self.expected_content_length -= num_bytes
        head = self._head
        if head:
            self._head = b""
            self.transport.write(head + body)
        else:
            self.transport.write(body)

    def _complete(self) -> None:
        if self.expected_content_length != 0:
            raise RuntimeError("Response content shorter than Content-Length")
        self.response_complete = True
        self.message_event.set()
        if not self.keep_alive:
            self.transport.close()
        self.on_response()

    async def receive(self) -> Any:
        if self.waiting_for_100_continue and not self.transport.is_closing():
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.waiting_for_100_continue = False
        if not self.disconnected and not self.response_complete:
            flow = self.flow
            if flow.read_paused:
                flow.resume_reading()
            event = self.message_event
            if not event.is_set():
                await event.wait()
            event.clear()
        if self.disconnected or self.response_complete:
            return {"type": "http.disconnect"}
        message = {"type": "http.request", "body": bytes(self.body), "more_body": self.more_body}
        self.body = bytearray()
        return message


class Signal:
    """`asyncio.Event` as the cycle and the protocol use it (`set`, `is_set`, `clear`,
    `wait`), cheaper to make per request: no lookups of the running loop."""

    __slots__ = ("_loop", "_set", "_waiters")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._set = False
        self._waiters: list[asyncio.Future[None]] = []

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if not self._set:
            self._set = True
            for waiter in self._waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def clear(self) -> None:
        self._set = False

    async def wait(self) -> bool:
        if self._set:
            return True
        waiter = self._loop.create_future()
        self._waiters.append(waiter)
        try:
            await waiter
            return True
        finally:
            self._waiters.remove(waiter)


def _unexpected(message: Message, complete: bool) -> RuntimeError:
    if complete:
        return RuntimeError(
            f"Unexpected ASGI message '{message['type']}' sent, after response already completed."
        )
    return RuntimeError(f"Expected ASGI message 'http.response.body', but got '{message['type']}'.")


def _closes(connection: bytes) -> bool:
    """Whether a `Connection` header's value says close."""
    return b"close" in [token.lower().strip() for token in connection.split(b",")]


def _forwarded(scope: Any, headers: list[tuple[bytes, bytes]], trusted: Any) -> None:
    """What uvicorn's `ProxyHeadersMiddleware` does to an HTTP request from a trusted peer:
    the scheme `X-Forwarded-Proto` names, the client `X-Forwarded-For` names."""
    proto: bytes | None = None
    forwarded_for: list[bytes] = []
    for name, value in headers:
        if name == b"x-forwarded-proto":
            proto = value
        elif name == b"x-forwarded-for":
            forwarded_for.append(value)
    if proto is not None:
        scheme = proto.decode("latin1").strip()
        if scheme in {"http", "https", "ws", "wss"}:
            scope["scheme"] = scheme
    if forwarded_for:
        host, port = trusted.get_trusted_client_address(b", ".join(forwarded_for).decode("latin1"))
        if host:
            scope["client"] = (host, port)
