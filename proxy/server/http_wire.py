"""uvicorn's httptools protocol, leaner per request (`LeanHttpTools`): with its cycle
(`http_cycle.py`), the one place that replaces parts of uvicorn's own
(tests/proxy/server/test_http_wire.py fails when uvicorn changes what they replace).

What each request no longer pays, its behaviour kept:
- `ProxyHeadersMiddleware`, the coroutine frame uvicorn wraps around every app (its default
  `proxy_headers`), which every resumption of the request's task passed through: the
  protocol applies the same `X-Forwarded-For` and `X-Forwarded-Proto` rules, with the same
  trusted hosts (`FORWARDED_ALLOW_IPS`), where it builds the scope; the connection's peer is
  judged once per connection.
- The response's `send` as a coroutine: `LeanCycle.send` writes at once and hands back an
  awaitable that is already done (a coroutine only while the transport's buffer is full).
  Every header is still checked by uvicorn's patterns, for all the names at once and all the
  values, by a translation table made from each (which costs a fraction of a search), rather
  than by two searches per header.
- Two writes for a response with a length: its head waits for its first body and both go
  out in one write (an event stream's head goes at once).
- A keep-alive timer armed after each response and cancelled by the next request: one timer
  per connection instead, re-armed when it fires before the connection has been idle for
  `timeout_keep_alive`.
- `httptools.parse_url` and the path's decoding for a request whose URL is the connection's
  last one (a client's usual request): the last one's parts are kept.
- A timer per request on reading its body (`asgi.read_body`): the scope says when the whole
  body has arrived (`BODY_ARRIVED`), and reading it then needs none; a body still coming is
  timed by the connection's one timer (`http_flow.Flow`), not one armed and cancelled per
  read, which under uvloop costs the loop one more poll.
- An `asyncio.Event` per request for the body's arrival (`Signal`, a lighter one), and the
  small frames of uvicorn's callbacks (the task start, the flow control's resume) inline.
- `run_asgi`, the coroutine uvicorn wraps around the app (a frame on every resumption of the
  request's task): the task runs the app's own coroutine, and what `run_asgi` does when it
  returns or raises (the errors logged, a 500 or the connection closed) `LeanCycle.ended`
  does, as the task's done callback. An app with `begin_request` (the edge's `begin`, as
  `Begins` says) is not even a frame: the protocol begins the request in the task's context
  and runs what that hands back as the task, and the end it hands back once the task is
  done, in the same context.
- A timer per request to watch its client for a disconnect (`asgi.DisconnectWatch`): the
  scope carries the cycle (`asgi.CYCLE`), which tells the watch at once when the connection
  is lost; and `receive`'s coroutine and message for a body that came whole: `read_body`
  takes it from the cycle (`LeanCycle.whole_body`).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import sys
import urllib.parse
from collections.abc import Awaitable, Callable
from types import CoroutineType
from typing import Any, Protocol

import httptools
from uvicorn.config import Config
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.protocols.http.httptools_impl import HIGH_WATER_LIMIT, HttpToolsProtocol
from uvicorn.server import ServerState

from .asgi import BODY_ARRIVED, CYCLE
from .http_cycle import LeanCycle
from .http_flow import Flow


class LeanHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol with the proxy headers applied in place and `LeanCycle`
    answering each request."""

    cycle: LeanCycle  # type: ignore[assignment]
    flow: Flow
    _url: bytes | None = None
    """The URL of the connection's last request, and what it was parsed into (`_parsed`):
    its raw path, its path and its query string."""
    _parsed: tuple[bytes, str, bytes]
    defaults: list[tuple[bytes, bytes]] | None = None
    """The server's headers the last cycle was made with, and their items (`default_items`),
    which every cycle takes while the list lasts (`http_cycle._items`)."""
    default_items: list[bytes] | None = None
    _head_most = 0
    """The head's size, at least (the bytes of the reads it came in), as `LimitedHttpTools`
    counts it; with `_max_bytes` and `_max_fields` (no limit here) what `on_headers_complete`
    compares before it calls `head_over` (`LimitedHttpTools`'s refusal)."""
    _max_bytes = _max_fields = sys.maxsize

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
        done = self.sent = self.loop.create_future()
        """An awaitable already done: what each cycle's `send` returns when it has written."""
        done.set_result(None)
        self._idle = False
        """Whether the connection waits for a request (its last response complete)."""
        self._idle_since = 0.0
        self._begin: Begins | None = getattr(self.app, "begin_request", None)
        self._direct = self._begin is not None or _runs_in_task(self.app)
        """Whether calling the app only makes its coroutine (it runs nothing until awaited),
        so that the coroutine can be the task's own."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        HttpToolsProtocol.connection_made(self, transport)
        self.flow = Flow(transport, self.loop)
        trusted = self._trusted
        if trusted is not None:
            client = self.client
            self._proxied = (client[0] if client else None) in trusted

    def connection_lost(self, exc: Exception | None) -> None:
        HttpToolsProtocol.connection_lost(self, exc)
        self.flow.close()
        cycle = self.cycle
        if cycle is not None and cycle.disconnected:
            departed = cycle.departed
            if departed is not None:
                cycle.departed = None
                departed()

    def data_received(self, data: bytes) -> None:
        # Spelled out in `http_limits.LimitedHttpTools.data_received` too: change both.
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
        # The head's limits (`LimitedHttpTools`'s) looked at here, not in an override that
        # calls this: a call less per request.
        self._head_open = self._head_begun = False
        if self._head_most > self._max_bytes or len(self.headers) > self._max_fields:
            self.head_over()
        parser = self.parser
        scope: Any = self.scope
        http_version = parser.get_http_version()
        scope["method"] = parser.get_method().decode("ascii")
        if http_version != "1.1":
            scope["http_version"] = http_version
        if parser.should_upgrade() and self._should_upgrade():
            return
        url = self.url
        if url == self._url:  # the connection's last URL again (a client's usual request)
            raw_path, path, query = self._parsed
        else:
            parsed_url = httptools.parse_url(url)
            raw_path = parsed_url.path
            path = raw_path.decode("ascii")
            if "%" in path:
                path = urllib.parse.unquote(path)
            query = parsed_url.query or b""
            self._url, self._parsed = url, (raw_path, path, query)
        root_path = self.root_path
        if root_path:
            scope["path"] = root_path + path
            scope["raw_path"] = root_path.encode("ascii") + raw_path
        else:
            scope["path"] = path
            scope["raw_path"] = raw_path
        scope["query_string"] = query
        if self._proxied:
            _forwarded(scope, self.headers, self._trusted)

        limit = self.limit_concurrency
        if limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit):
            app = service_unavailable
            self.logger.warning("Exceeded concurrency limit.")
        else:
            app = self.app

        existing_cycle = self.cycle
        keep_alive = http_version != "1.0" and parser.should_keep_alive()
        cycle = self.cycle = LeanCycle(self, scope, keep_alive)
        if existing_cycle is None or existing_cycle.response_complete:
            self._start_asgi_task(cycle, app)
        else:  # pipelined: it waits for the answer before it
            self.flow.pause_reading()
            self.pipeline.appendleft((cycle, app))

    def head_over(self) -> None:
        """The head may be past the limits (its reads or fields are): raise if it is. No
        limits here; `LimitedHttpTools` has them."""

    def on_message_complete(self) -> None:
        cycle = self.cycle
        if (self.parser.should_upgrade() and self._should_upgrade()) or cycle.response_complete:
            return
        cycle.more_body = False
        cycle.scope[BODY_ARRIVED] = True  # type: ignore[literal-required]
        event: Any = cycle.message_event
        if not event.up:  # `on_body` set it, when the request had a body
            event.set()

    def on_body(self, body: bytes) -> None:
        cycle = self.cycle
        if (self.parser.should_upgrade() and self._should_upgrade()) or cycle.response_complete:
            return
        cycle.body += body
        if len(cycle.body) > HIGH_WATER_LIMIT:
            self.flow.pause_reading()
        event: Any = cycle.message_event
        if event.waiters:
            event.set()
        else:
            event.up = True  # set, without a call: no one to wake

    def _start_asgi_task(self, cycle: LeanCycle, app: Any) -> None:  # type: ignore[override]
        tasks = cycle.tasks = self.tasks
        context = (
            contextvars.Context() if self.config.reset_contextvars else contextvars.copy_context()
        )
        begin = self._begin
        run: Any
        done: Callable[[asyncio.Task[None]], None]
        if (app is self.app and self._direct) or app is service_unavailable:
            # The app's coroutine is the task's: `ended` does what run_asgi would.
            scope: Any = cycle.scope
            scope[CYCLE] = cycle
            if begin is not None and app is self.app:
                try:
                    run, cycle.end = context.run(begin, scope, cycle.receive, cycle.send)
                except Exception as exc:
                    run = _raise(exc)
                if type(run) is not CoroutineType:
                    run = _awaited(run)  # a task runs a coroutine
            else:
                run = app(scope, cycle.receive, cycle.send)  # type: ignore[arg-type]
            done = cycle.ended
        else:
            run = cycle.run_asgi(app)
            done = tasks.discard
        task: asyncio.Task[None] = self.loop.create_task(run, context=context)
        cycle.task = task
        task.add_done_callback(done, context=context)
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
            self._start_asgi_task(cycle, app)  # type: ignore[arg-type]
            return
        # One keep-alive timer per connection, re-armed when it fires early, rather than one
        # armed and cancelled per request.
        self._idle = True
        self._idle_since = self.loop.time()
        if self.timeout_keep_alive_task is None:
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

    def awaits_request(self) -> bool:
        """Whether the connection waits for a request it was taken for: its first, or a next
        one begun (not one idle after an answer, nor one closing). A stop lets it come
        (`stopping.answering_first`)."""
        cycle = self.cycle
        if self.transport.is_closing():
            return False
        return cycle is None or (cycle.response_complete and not self._idle)

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


async def _raise(exc: Exception) -> None:
    raise exc


async def _awaited(awaitable: Awaitable[None]) -> None:
    await awaitable


class Begins(Protocol):
    """An app's `begin_request`: the request of `scope` begun (in the context its task will
    run in), what serves it, to run as the task, and what ends it (or None), to call once
    the task is done, however it ended."""

    def __call__(
        self, scope: Any, receive: Any, send: Any
    ) -> tuple[Awaitable[None], Callable[[], None] | None]: ...


def _runs_in_task(app: Any) -> bool:
    """Whether `app` is a coroutine function (or an object whose `__call__` is one): calling
    it runs none of its code, which then runs in the task that awaits it."""
    return inspect.iscoroutinefunction(app) or inspect.iscoroutinefunction(type(app).__call__)


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
