"""uvicorn's request-response cycle, leaner per request (`LeanCycle`), for the protocol of
`http_wire.py` (whose docstring says what each request no longer pays, and whose test fails
when uvicorn changes what these replace): `send` writes at once, a head with a length goes
out with its body, `run_asgi`'s checks run as the task's done callback (`ended`), and the
cycle is the scope's `asgi.Cycle`, whose body still coming is timed by its connection's one
timer (`http_flow.Flow`); a front's own answer or stream is written without its messages
(`answer`, `open_stream`, `chunk`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.httptools_impl import (
    HEADER_RE,
    HEADER_VALUE_RE,
    STATUS_LINE,
    RequestResponseCycle,
)
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

from .asgi import CYCLE, send_fields
from .http_flow import BodyTimer, Flow, Signal

Message = dict[str, Any]


class LeanCycle(RequestResponseCycle):
    """uvicorn's request-response cycle, whose `send` writes at once (see the module); the
    scope's `asgi.Cycle` (`task`, `disconnected`, `departed`, `whole_body`)."""

    sent: asyncio.Future[None]
    """An awaitable already done: what `send` returns when it has written."""
    flow: Flow
    task: asyncio.Task[None]
    """The task that serves the request."""
    tasks: set[asyncio.Task[None]]
    """The server's running tasks, which `ended` leaves."""
    _head = b""
    """A response head not yet written: it goes out with the first body."""
    departed: Callable[[], None] | None = None
    """Called once, at once, when the client leaves before the response is complete."""
    end: Callable[[], None] | None = None
    """What the app's `begin_request` handed back to call once its task is done."""
    # uvicorn's initial state, where it is the same for every request (set when it changes).
    disconnected = False
    more_body = True
    response_started = False
    response_complete = False
    chunked_encoding: bool | None = None
    expected_content_length = 0

    def __init__(self, protocol: Any, scope: Any, keep_alive: bool) -> None:
        """uvicorn's `__init__` with its arguments read from the `protocol` (no keywords to
        match per request)."""
        self.scope = scope
        self.transport = protocol.transport
        self.flow = protocol.flow
        self.logger = protocol.logger
        self.access_logger = protocol.access_logger
        self.access_log = protocol.access_log
        defaults = protocol.server_state.default_headers
        if defaults is not protocol.defaults:  # a new list (uvicorn's date changes each second)
            protocol.defaults, protocol.default_items = defaults, _items(defaults)
        self.default_headers = defaults
        self.default_items: list[bytes] | None = protocol.default_items
        """The server's headers as the head's items (`_items`), or None: judged per response."""
        self.message_event = Signal()  # type: ignore[assignment]
        self.on_response = protocol.on_response_complete
        self.keep_alive = keep_alive
        self.waiting_for_100_continue = protocol.expect_100_continue
        self.body = bytearray()
        self.sent = protocol.sent

    def ended(self, task: asyncio.Task[None]) -> None:
        """What uvicorn's `run_asgi` does once the app's coroutine ends, as its task's done
        callback: an exception logged, then a 500 (or, once the response has started, the
        connection closed); an app that returned something, or without a complete response,
        logged too. It breaks the references back to the cycle (from its scope, and through
        `on_response` from the protocol), as `run_asgi` does, so that the request's objects
        are freed as it ends, not by the garbage collector."""
        self.tasks.discard(task)
        self.scope.pop(CYCLE, None)  # type: ignore[misc]
        self.departed = None
        exc: BaseException | None
        try:
            exc = task.exception()
        except asyncio.CancelledError as cancelled:
            exc = cancelled
        end = self.end
        if end is not None:  # the app's own end first, as it would be inside run_asgi
            self.end = None
            try:
                end()
            except Exception as failed:
                exc = exc or failed
        if exc is not None:
            self.logger.error("Exception in ASGI application\n", exc_info=exc)
            if not self.response_started:
                self._answer_500()
                return
            self.transport.close()
        elif task.result() is not None:
            msg = "ASGI callable should return None, but returned '%s'."
            self.logger.error(msg, task.result())
            self.transport.close()
        elif not self.response_started and not self.disconnected:
            self.logger.error("ASGI callable returned without starting response.")
            self._answer_500()
            return
        elif not self.response_complete and not self.disconnected:
            self.logger.error("ASGI callable returned without completing response.")
            self.transport.close()
        self.on_response = _nothing

    def whole_body(self) -> bytes | None:
        if self.more_body or self.waiting_for_100_continue or self.disconnected:
            return None
        if self.response_complete:
            return None
        # What `receive` does when the body is there: the body taken, the event cleared.
        flow = self.flow
        if flow.read_paused:
            flow.resume_reading()
        self.message_event.up = False  # type: ignore[attr-defined]  # cleared, without a call
        body = bytes(self.body)
        self.body = bytearray()
        return body

    def time_body(self, timeout_s: float) -> BodyTimer:
        """A read of the body that is still coming (`asgi.read_body`), timed from now."""
        return self.flow.time_body(self.task, timeout_s)

    def _answer_500(self) -> None:
        task = self.task.get_loop().create_task(self._send_500())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _send_500(self) -> None:
        try:
            await self.send_500_response()
        finally:
            self.on_response = _nothing

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
            self._write_chunk(b"", body, more_body)
            return self.sent
        else:
            self._write_within_length(body)
        if not more_body:
            self._complete()
        return self.sent

    def answer(self, status: int, fields: bytes, body: bytes) -> Any:
        """`asgi.Cycle.answer`: the head and the body in one write, with no message to read
        and no header to judge (the server's own were judged once, `_items`); through `send`
        where it would do more (`_begun_at_once`)."""
        if self.disconnected:
            return self.sent
        items = self._begun_at_once(status)
        if items is None:
            return send_fields(self.send, status, fields, body)
        end = b"\r\n" if self.keep_alive else b"connection: close\r\n\r\n"
        self.transport.write(b"".join((STATUS_LINE[status], *items, fields, end, body)))
        self._complete()
        return self.sent

    def open_stream(self, status: int, fields: bytes, body: bytes, more: bool) -> Any:
        """`asgi.Cycle.open_stream`: the head, chunked, and the first body in one write, as
        `answer` writes a whole response (and through `send` where it would)."""
        if self.disconnected:
            return self.sent
        items = self._begun_at_once(status)
        if items is None:
            return send_fields(self.send, status, fields, body, more)
        self.chunked_encoding = True
        close = b"" if self.keep_alive else b"connection: close\r\n"
        head = (STATUS_LINE[status], *items, fields, close, b"transfer-encoding: chunked\r\n\r\n")
        self._write_chunk(b"".join(head), body, more)
        return self.sent

    def chunk(self, body: bytes, more: bool) -> Any:
        """`asgi.Cycle.chunk`: what `send` does with a body of a chunked response, without
        its message (the rest through `send`)."""
        if self.disconnected:
            return self.sent
        if self.flow.write_paused or self.response_complete or not self.chunked_encoding:
            return self.send({"type": "http.response.body", "body": body, "more_body": more})
        self._write_chunk(b"", body, more)
        return self.sent

    def _begun_at_once(self, status: int) -> list[bytes] | None:
        """The response begun, to be written without its messages: the server's headers as
        the head's items. None when `send` must do it: a write to wait for, the server's
        headers to judge with the app's (`_items`), a HEAD request, a response begun."""
        items = self.default_items
        if (
            items is None
            or self.response_started
            or self.flow.write_paused
            or self.scope["method"] == "HEAD"
        ):
            return None
        self.response_started = True
        self.waiting_for_100_continue = False
        if self.access_log:
            self._log_access(status)
        return items

    def _write_chunk(self, head: bytes, body: bytes, more: bool) -> None:
        """`body` as a chunk after `head` (empty, or the response's head), in one write; with
        the last chunk's mark, and the response complete, unless `more`."""
        if body:
            end = b"" if more else b"0\r\n\r\n"
            self.transport.write(b"%b%x\r\n%b\r\n%b" % (head, len(body), body, end))
        elif not more:
            self.transport.write(head + b"0\r\n\r\n")
        elif head:
            self.transport.write(head)
        if not more:
            self._complete()

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
        headers = [*message.get("headers", ())]
        if self.access_log:
            self._log_access(status_code)
        # The server's headers made once (`_items`) need no judging: the app's alone.
        items = self.default_items
        content = [STATUS_LINE[status_code], *(items or ())]
        headers = headers if items is not None else [*self.default_headers, *headers]
        has_connection_close = False
        for name, value in headers:
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
        # uvicorn's check of each header, by its patterns, done at once for all the names
        # (values): each pattern finds one byte, which their table changes (`_changes`).
        # Each header is four items of `content`: its name (lowered, valid as the name is:
        # `lower` changes letters only), then its value.
        joined = b"".join(content[1::4])
        if joined.translate(_NAME_CHANGES) != joined:
            raise _invalid(headers if items is None else [*self.default_headers, *headers])
        joined = b"".join(content[3::4])
        if joined.translate(_VALUE_CHANGES) != joined:
            raise _invalid(headers if items is None else [*self.default_headers, *headers])
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

    def _log_access(self, status_code: int) -> None:
        scope: Any = self.scope
        self.access_logger.info(
            '%s - "%s %s HTTP/%s" %d',
            get_client_addr(scope),
            scope["method"],
            get_path_with_query_string(scope),
            scope["http_version"],
            status_code,
        )

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
        event: Any = self.message_event
        if event.waiters:
            event.set()
        else:
            event.up = True  # set, without a call: no one to wake
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
            event: Any = self.message_event
            if not event.up:
                await event.wait(self.sent.get_loop())
            event.up = False  # cleared
        if self.disconnected or self.response_complete:
            return {"type": "http.disconnect"}
        message = {"type": "http.request", "body": bytes(self.body), "more_body": self.more_body}
        self.body = bytearray()
        return message


def _changes(pattern: re.Pattern[bytes]) -> bytes:
    """A `bytes.translate` table that changes exactly the bytes `pattern` (a class of one
    byte) finds: a header's name (value) is valid when the table leaves it as it is."""
    return bytes((byte + 1) % 256 if pattern.match(bytes([byte])) else byte for byte in range(256))


_NAME_CHANGES = _changes(HEADER_RE)
_VALUE_CHANGES = _changes(HEADER_VALUE_RE)


def _invalid(headers: list[tuple[bytes, bytes]]) -> RuntimeError:
    """uvicorn's refusal of the first invalid header (its name, else its value)."""
    for name, value in headers:
        if HEADER_RE.search(name):
            break
        if HEADER_VALUE_RE.search(value):
            return RuntimeError("Invalid HTTP header value.")
    return RuntimeError("Invalid HTTP header name.")


def _items(headers: list[tuple[bytes, bytes]]) -> list[bytes] | None:
    """The server's own headers as a head's items, as `_start` makes them of each (lowered
    name, `: `, value, CRLF), made once for every response while the list lasts; None when
    one of them sets the length, the transfer encoding or the connection, or is not valid
    (then `_start` judges them with the app's, as uvicorn does, and `answer` sends by
    `send`). `_start` checks their bytes again with the app's in every head."""
    items: list[bytes] = []
    for name, value in headers:
        name = name.lower()
        if name == b"content-length" or name == b"transfer-encoding" or name == b"connection":
            return None
        if name.translate(_NAME_CHANGES) != name or value.translate(_VALUE_CHANGES) != value:
            return None
        items += (name, b": ", value, b"\r\n")
    return items


def _nothing() -> None:
    pass


def _unexpected(message: Message, complete: bool) -> RuntimeError:
    if complete:
        return RuntimeError(
            f"Unexpected ASGI message '{message['type']}' sent, after response already completed."
        )
    return RuntimeError(f"Expected ASGI message 'http.response.body', but got '{message['type']}'.")


def _closes(connection: bytes) -> bool:
    """Whether a `Connection` header's value says close."""
    return b"close" in [token.lower().strip() for token in connection.split(b",")]
