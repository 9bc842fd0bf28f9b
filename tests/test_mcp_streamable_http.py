"""The Streamable HTTP transport on `http1` (`registry.mcp.streamable_http`) against real MCP
servers written with the SDK: what it gives the session is what the SDK's own client gives
(JSON and event-stream answers, progress, a server's questions mid-call), and it keeps the
protocol's headers, the session id, the GET stream and the DELETE on close; an expired
session and a server that is down fail calls clearly, without a hang or a leaked task."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import orjson
import pytest
from mcp import ClientSession, MCPError
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.message import SessionMessage
from starlette.types import ASGIApp, Receive, Scope, Send

from registry import Executor, ToolCall, ToolRegistry, ToolResult
from registry.mcp import McpSource, McpSourceConfig
from registry.mcp.event_stream import EventStream, EventTooLong
from registry.mcp.http_answers import content_type, header, plain_result, redirect
from registry.mcp.http_requests import proxied, request_body
from registry.mcp.inbox import Inbox
from registry.mcp.origins import Origins
from registry.mcp.streamable_http import streamable_http_transport
from testing.asgi_serving import serve_app
from testing.mcp_servers import serve_http
from testing.waiting import until

LIMIT = 1 << 20
CallTool = Callable[..., Awaitable[ToolResult]]
FORM: types.ElicitRequestedSchema = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


def _server(started: asyncio.Event | None = None) -> MCPServer:
    server = MCPServer("toolwire-test-http")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    async def steps(count: int, ctx: Context) -> str:
        """Report `count` steps of progress, then finish."""
        for step in range(1, count + 1):
            await ctx.report_progress(step, count, f"step {step}")
        return f"{count} steps"

    @server.tool()
    async def hang() -> str:
        """Say that it started, then never finish."""
        if started is not None:
            started.set()
        await anyio.sleep_forever()
        return "never"

    @server.tool()
    async def cut(ctx: Context) -> str:
        """Close the call's event stream, then finish: the client resumes the stream."""
        await ctx.report_progress(1, 2, "before the cut")
        await ctx.close_sse_stream()
        await ctx.report_progress(2, 2, "after the cut")
        return "resumed"

    @server.tool()
    async def ask_name(ctx: Context) -> str:
        """Ask the client for a name mid-call."""
        answer = await ctx.request_context.session.elicit_form("Your name?", FORM, ctx.request_id)
        return json.dumps({"action": answer.action, "content": answer.content})

    @server.tool()
    async def summarize(text: str, ctx: Context) -> str:
        """Ask the client's model for a completion mid-call."""
        message = types.SamplingMessage(role="user", content=types.TextContent(text=text))
        # Sampling is deprecated from 2026-07-28 on; servers of the 2025 era still ask.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            result = await ctx.request_context.session.create_message(
                [message], max_tokens=100, related_request_id=ctx.request_id
            )
        content = result.content
        return content.text if isinstance(content, types.TextContent) else ""

    return server


@dataclass
class _Seen:
    """The requests a server received (method, headers), and how it should answer some."""

    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    expired: bool = False
    """Answer every request that names a session with 404, as a server that forgot it."""
    no_get: bool = False
    """Answer the GET stream with 405, as a server without one."""
    answer: tuple[int, str, bytes] | None = None
    """Answer every POST that names a session with this status, content type and body."""

    def wrap(self, app: ASGIApp) -> ASGIApp:
        async def recorded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                return await app(scope, receive, send)
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            method = scope["method"]
            self.requests.append((method, headers))
            if (self.expired and "mcp-session-id" in headers) or (self.no_get and method == "GET"):
                status = 404 if self.expired else 405
                await send({"type": "http.response.start", "status": status, "headers": []})
                return await send({"type": "http.response.body", "body": b""})
            if self.answer is not None and method == "POST" and "mcp-session-id" in headers:
                status, kind, body = self.answer
                head = [(b"content-type", kind.encode())]
                await send({"type": "http.response.start", "status": status, "headers": head})
                return await send({"type": "http.response.body", "body": body})
            await app(scope, receive, send)

        return recorded

    def methods(self) -> list[str]:
        return [method for method, _ in self.requests]


@contextlib.asynccontextmanager
async def _serving(
    seen: _Seen,
    *,
    json_response: bool = False,
    started: asyncio.Event | None = None,
    events: EventStore | None = None,
) -> AsyncIterator[str]:
    app = _server(started).streamable_http_app(json_response=json_response, event_store=events)
    async with serve_app(seen.wrap(app), timeout_graceful_shutdown=1) as root:
        yield root + "/mcp"


def _transports(
    origins: Origins | None = None, headers: dict[str, str] | None = None
) -> dict[str, Callable[[str], contextlib.AbstractAsyncContextManager[TransportStreams]]]:
    """Toolwire's transport and the SDK's client, to compare."""
    return {
        "http1": lambda url: streamable_http_transport(
            url, headers or {}, 10.0, origins, max_event_bytes=LIMIT
        ),
        "sdk": lambda url: streamable_http_client(url),
    }


async def _answer_form(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def _answer_sampling(
    context: Any, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    text = params.messages[0].content
    said = text.text if isinstance(text, types.TextContent) else ""
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text=f"short: {said}"), model="m"
    )


@contextlib.asynccontextmanager
async def _session(
    transport: contextlib.AbstractAsyncContextManager[TransportStreams],
    elicit: Any = _answer_form,
) -> AsyncIterator[ClientSession]:
    async with (
        transport as (read, write),
        ClientSession(
            read, write, elicitation_callback=elicit, sampling_callback=_answer_sampling
        ) as session,
    ):
        await session.initialize()
        yield session


def _dumped(result: types.CallToolResult) -> dict[str, Any]:
    return result.model_dump(mode="json")


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_answers_are_the_sdk_clients(json_response: bool):
    """JSON and event-stream answers: the same listing and results as the SDK's client."""
    got: dict[str, Any] = {}
    seen = _Seen()
    async with _serving(seen, json_response=json_response) as url:
        for name, transport in _transports().items():
            async with asyncio.timeout(30), _session(transport(url)) as session:
                listed = await session.list_tools()
                echoed = await session.call_tool("echo", {"text": "hé 🙂"})
                stepped = await session.call_tool("steps", {"count": 2})
            got[name] = ([t.name for t in listed.tools], _dumped(echoed), _dumped(stepped))

    assert got["http1"] == got["sdk"]
    tools, echoed, stepped = got["http1"]
    assert tools == ["echo", "steps", "hang", "cut", "ask_name", "summarize"]
    assert echoed["content"][0]["text"] == "hé 🙂" and not echoed["is_error"]
    assert stepped["content"][0]["text"] == "2 steps"


async def test_progress_arrives_before_the_result():
    seen = _Seen()
    async with _serving(seen) as url:
        for transport in _transports().values():
            progress: list[tuple[float, float | None, str | None]] = []

            async with asyncio.timeout(30), _session(transport(url)) as session:
                await session.call_tool("echo", {"text": "warm the connection"})
                result = await session.call_tool(
                    "steps", {"count": 3}, progress_callback=_noting(progress)
                )
                at_result = list(progress)

            assert result.content[0] == types.TextContent(text="3 steps")
            assert at_result == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


def _noting(progress: list[tuple[float, float | None, str | None]]) -> Any:
    async def note(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    return note


async def test_a_servers_questions_mid_call_are_answered_and_traced_to_their_call():
    """Elicitation and sampling on a call's own stream; `Origins` learns the call of each."""
    origins = Origins()
    asked: list[str | None] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(origins.call_of(getattr(context, "request_id", None)))
        return await _answer_form(context, params)

    seen = _Seen()
    async with _serving(seen) as url:
        transport = _transports(origins)["http1"](url)
        async with asyncio.timeout(30), _session(transport, answer) as session:
            meta: types.RequestParamsMeta = {"progress_token": "call-7"}
            named = await session.call_tool("ask_name", {}, meta=meta)
            summary = await session.call_tool("summarize", {"text": "a long story"})

    assert json.loads(named.content[0].text) == {"action": "accept", "content": {"name": "Ada"}}
    assert asked == ["call-7"]
    assert summary.content[0] == types.TextContent(text="short: a long story")


async def test_the_session_id_and_version_go_with_every_request_and_close_deletes_it():
    seen = _Seen()
    async with _serving(seen) as url:
        transport = _transports(headers={"X-Team": "blue"})["http1"](url)
        async with asyncio.timeout(30), _session(transport) as session:
            await session.call_tool("echo", {"text": "one"})
            await session.call_tool("echo", {"text": "two"})
            # The GET stream opens after `initialized`, in its own time.
            await until(lambda: "GET" in seen.methods())

    (first, initialize), *rest = seen.requests
    assert first == "POST" and "mcp-session-id" not in initialize
    assert initialize["accept"] == "application/json, text/event-stream"
    session_id = rest[0][1]["mcp-session-id"]
    assert all(headers["mcp-session-id"] == session_id for _, headers in rest)
    assert all(headers["x-team"] == "blue" for _, headers in seen.requests)
    assert all(headers.get("mcp-protocol-version") for _, headers in rest)
    assert _last_but_get(seen) == "DELETE"
    # initialize, initialized, the two calls and the tools/list the SDK sends after a first call
    assert seen.methods().count("POST") == 5
    assert initialize["user-agent"] == "toolwire"


async def test_a_server_without_a_get_stream_still_serves_calls():
    seen = _Seen(no_get=True)
    async with _serving(seen) as url:
        transport = _transports()["http1"](url)
        async with asyncio.timeout(30), _session(transport) as session:
            await until(lambda: "GET" in seen.methods())
            assert (await session.call_tool("echo", {"text": "x"})).content[0].text == "x"

    assert seen.methods().count("GET") == 1  # a 405 is not asked again


async def test_an_expired_session_fails_the_call_with_session_terminated():
    """A server that forgot the session answers 404: the SDK's "Session terminated", which
    `registry.mcp.session` takes as a lost connection (and reconnects)."""
    seen = _Seen()
    async with _serving(seen) as url:
        for transport in _transports().values():
            async with asyncio.timeout(30), _session(transport(url)) as session:
                seen.expired = True
                with pytest.raises(MCPError) as caught:
                    await session.call_tool("echo", {"text": "x"})
                seen.expired = False
            assert (caught.value.code, caught.value.message) == (
                types.INVALID_REQUEST,
                "Session terminated",
            )


def _last_but_get(seen: _Seen) -> str:
    """The last request's method, the GET stream's aside (a GET still on its way when the
    session closed may reach the server after its DELETE)."""
    return [method for method in seen.methods() if method != "GET"][-1]


def _first(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


@contextlib.contextmanager
def _refused_port() -> Iterator[int]:
    """A loopback port bound but not listening while the block runs: connections to it are
    refused (a port closed first could meanwhile be taken, by another worker's server or by
    a client's own end of its connection)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def _left_behind(before: set[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    """The tasks started since `before`, but for the test server's: sse-starlette's shutdown
    watcher polls every 0.5 s and outlives a server that stopped between two polls."""
    return {
        task
        for task in asyncio.all_tasks() - before
        if task.get_coro().__qualname__ != "_shutdown_watcher"  # type: ignore[union-attr]
    }


async def test_a_server_that_is_down_fails_at_once_with_the_reason():
    before = asyncio.all_tasks()
    with _refused_port() as port:
        transport = _transports()["http1"](f"http://127.0.0.1:{port}/mcp")
        # The session's task groups, as the SDK's.
        with pytest.raises(BaseExceptionGroup) as caught:
            async with asyncio.timeout(30), _session(transport):
                pass

    error = _first(caught.value)
    assert isinstance(error, MCPError) and error.code == types.CONNECTION_CLOSED
    assert "cannot connect to 127.0.0.1" in error.message
    assert "Connection refused" in error.message
    assert not _left_behind(before), "a task was left behind"


async def test_a_server_that_went_away_fails_the_next_call_and_ends_the_transport():
    before = asyncio.all_tasks()
    seen = _Seen()
    async with _serving(seen) as url:
        transport = _transports()["http1"](url)
        opened = _session(transport)
        session = await opened.__aenter__()
    try:
        async with asyncio.timeout(30):
            with pytest.raises(MCPError) as caught:
                await session.call_tool("echo", {"text": "x"})
            with pytest.raises(MCPError) as after:
                await session.call_tool("echo", {"text": "x"})
    finally:
        await opened.__aexit__(None, None, None)

    assert caught.value.code == types.CONNECTION_CLOSED
    assert after.value.code == types.CONNECTION_CLOSED
    assert not _left_behind(before), "a task was left behind"


@pytest.mark.parametrize("size", [1, 2, 3, 5, 4096])
@pytest.mark.parametrize("newline", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_events_are_read_however_the_stream_is_cut(size: int, newline: bytes):
    stream = newline.join(
        [
            b": a comment",
            b"id: prime",
            b"data:",
            b"",
            b"event: message",
            b"id: 1",
            b"retry: 250",
            b'data: {"a":',
            b"data:1}",
            b"",
            b"event: other",
            b"data: ignored",
            b"",
            b'data: {"b": 2}',
            b"",
            b"",
        ]
    )
    events = EventStream(LIMIT)
    got = [data for i in range(0, len(stream), size) for data in events.feed(stream[i : i + size])]

    assert got == [b'{"a":\n1}', b'{"b": 2}']
    assert (events.last_id, events.retry_ms) == ("1", 250)


def test_an_event_longer_than_the_limit_is_refused():
    events = EventStream(16)
    with pytest.raises(EventTooLong):
        events.feed(b"data: " + b"x" * 40 + b"\n\n")


def test_the_events_before_one_too_long_are_read_first():
    """A response followed, in the same read, by an event past the limit still answers."""
    events = EventStream(16)
    assert events.feed(b"data: {}\n\ndata: " + b"x" * 40 + b"\n\n") == [b"{}"]
    with pytest.raises(EventTooLong):
        events.feed(b"data: more\n\n")


async def test_a_result_goes_straight_to_its_call_only_when_nothing_is_queued_before_it():
    inbox = Inbox()
    claimed: list[types.RequestId] = []

    def claim(request_id: types.RequestId, result: dict[str, Any]) -> bool:
        claimed.append(request_id)
        return request_id != 3  # 3: no call of the claimant's waits for it

    assert not inbox.claimed(1, {})  # no claimant yet
    inbox.claim = claim
    assert inbox.claimed(1, {})
    progress = SessionMessage(
        types.JSONRPCNotification(jsonrpc="2.0", method="notifications/progress")
    )
    inbox.put(progress)
    assert not inbox.claimed(2, {})  # behind the progress: the session reads that first
    assert await inbox.receive() is progress
    assert not inbox.claimed(3, {})
    assert claimed == [1, 3]


@pytest.mark.parametrize(
    "params",
    [
        {"name": "echo", "arguments": {"text": "hé 🙂", "n": 1.5, "big": 1e20, "none": None}},
        {"name": "echo", "arguments": {"list": [1, True, {"a": []}]}, "_meta": {"k": "v"}},
        {"name": "echo", "arguments": {"huge": 1 << 70}},
        None,
    ],
    ids=["text", "nested", "huge-int", "null"],
)
def test_a_request_is_written_as_the_sdk_writes_it(params: dict[str, Any] | None):
    request = types.JSONRPCRequest(jsonrpc="2.0", id=7, method="tools/call", params=params)
    unset = types.JSONRPCRequest(jsonrpc="2.0", id="a", method="tools/list")
    for message in (request, unset):
        sdk = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        assert request_body(message) == sdk


def test_only_a_plain_answer_has_a_plain_result():
    assert plain_result({"jsonrpc": "2.0", "id": 1, "result": {"a": 1}}) == {"a": 1}
    assert plain_result({"jsonrpc": "2.0", "id": "x", "result": {}}) == {}
    error = {"code": -1, "message": "no"}
    assert plain_result({"jsonrpc": "2.0", "id": 1, "error": error}) is None
    assert plain_result({"jsonrpc": "2.0", "id": None, "result": {}}) is None
    assert plain_result({"jsonrpc": "2.0", "id": 1, "result": {}, "x": 1}) is None
    assert plain_result({"jsonrpc": "2.0", "id": 1, "result": []}) is None
    assert plain_result([]) is None


@dataclass
class _Answer:
    """An answer's headers as `http1.Response` holds them."""

    raw_headers: list[tuple[bytes, bytes]]

    @property
    def headers(self) -> dict[str, str]:
        return {name.decode().lower(): value.decode() for name, value in self.raw_headers}


@pytest.mark.parametrize("name", [b"content-type", b"Content-Type", b"CONTENT-TYPE"])
def test_a_header_is_found_however_it_is_spelled(name: bytes):
    answer: Any = _Answer([(b"date", b"today"), (name, b"Text/Event-Stream; charset=utf-8")])
    assert content_type(answer) == "text/event-stream; charset=utf-8"
    assert header(answer, b"mcp-session-id", b"Mcp-Session-Id") == ""


@contextlib.asynccontextmanager
async def _source(url: str, **options: Any) -> AsyncIterator[tuple[McpSource, CallTool]]:
    """An MCP source of the server at `url`, as proxy.yaml configures one; its calls run
    through the real executor."""
    registry = ToolRegistry()
    entry = {"mcp": {"url": url, **options.pop("mcp", {})}, "namespace": "h", **options}
    source = McpSource(McpSourceConfig.model_validate(entry), base_dir=Path.cwd())
    try:
        await source.start(registry)
        with Executor(default_timeout_s=20) as executor:

            async def call(name: str, **arguments: Any) -> ToolResult:
                tool = registry.get_tool(f"h.{name}")
                return await executor.execute(tool, ToolCall("c1", f"h_{name}", arguments))

            yield source, call
    finally:
        await source.aclose()


async def test_a_source_calls_over_http1_unless_it_uses_oauth():
    """The wiring: a source's session uses this transport (its requests are `http1`'s); the
    headers configured on it go with every request."""
    seen = _Seen()
    async with (
        _serving(seen) as url,
        _source(url, mcp={"headers": {"X-Team": "blue"}}) as (_, call),
    ):
        assert (await call("echo", text="over http1")).content == "over http1"

    assert {headers["user-agent"] for _, headers in seen.requests} == {"toolwire"}
    assert all(headers["x-team"] == "blue" for _, headers in seen.requests)
    assert _last_but_get(seen) == "DELETE"


async def test_a_source_whose_session_expired_reconnects():
    seen = _Seen()
    async with _serving(seen) as url, _source(url) as (source, call):
        assert (await call("echo", text="before")).content == "before"
        seen.expired = True
        lost = await call("echo", text="lost")
        seen.expired = False
        async with asyncio.timeout(15):
            await source.wait_connected()
        after = await call("echo", text="after")

    assert lost.is_error and "was lost during the call (Session terminated)" in lost.content
    assert after.content == "after"


async def test_a_source_whose_server_is_down_says_why():
    with _refused_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with asyncio.timeout(30), _source(url, optional=True) as (source, _):
            status = source.status()

    assert not status.reachable
    assert "cannot connect to 127.0.0.1" in (status.error or "")
    assert "Connection refused" in (status.error or "")


async def test_a_redirect_within_the_endpoints_origin_is_followed():
    """`/mcp/` for `/mcp`: the server's 307 is followed, the POST's body with it."""
    seen = _Seen()
    async with _serving(seen) as url:
        transport = _transports()["http1"](url + "/")
        async with asyncio.timeout(30), _session(transport) as session:
            result = await session.call_tool("echo", {"text": "moved"})

    assert result.content[0] == types.TextContent(text="moved")
    assert seen.methods()[:2] == ["POST", "POST"]  # the first answered 307


def test_only_redirects_within_the_origin_that_keep_a_posts_method_are_followed():
    def where(status: int, location: str, method: str = "POST") -> str | None:
        return redirect(status, {"location": location}, "http://mcp.test/mcp", method)

    assert where(307, "/mcp/") == "http://mcp.test/mcp/"
    assert where(308, "https://mcp.test/mcp") == "https://mcp.test/mcp"
    assert where(307, "http://elsewhere.test/mcp") is None
    assert where(307, "http://mcp.test:8080/mcp") is None
    assert where(302, "/mcp/") is None  # a POST would become a GET
    assert where(302, "/mcp/", "GET") == "http://mcp.test/mcp/"
    assert where(200, "/mcp/") is None
    assert where(301, "https://mcp.test/mcp", "GET") == "https://mcp.test/mcp"
    assert where(307, "https://mcp.test:8443/mcp") is None
    assert where(307, "http://mcp.test:99999/mcp") is None


async def test_nothing_is_sent_once_the_transport_is_left():
    seen = _Seen()
    async with _serving(seen) as url:
        async with streamable_http_transport(url, {}, 10.0, max_event_bytes=LIMIT) as (_, write):
            pass
        initialized = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")
        with pytest.raises(anyio.ClosedResourceError):
            await write.send(SessionMessage(initialized))

    assert seen.requests == []


async def test_a_tool_list_change_reaches_the_source():
    """The server's `tools/list_changed` (sent while a call runs) re-lists the tools."""
    async with serve_http("changing", "streamable-http") as url, _source(url) as (source, call):
        assert (await call("grow")).content == "added extra_1"
        await until(lambda: source.status().tool_count >= 4)
        assert (await call("extra_1")).content == "extra_1 works"


async def test_a_server_that_dies_mid_call_fails_the_call_at_once():
    started = asyncio.Event()
    server = contextlib.AsyncExitStack()
    url = await server.enter_async_context(_serving(_Seen(), started=started))
    try:
        async with _source(url) as (_, call):
            hanging = asyncio.create_task(call("hang"))
            async with asyncio.timeout(10):
                await started.wait()
            await server.aclose()  # uvicorn ends the call's stream after its 1 s of grace
            async with asyncio.timeout(15):  # well short of the call's own 20 s
                result = await hanging
    finally:
        await server.aclose()

    assert result.is_error and "was lost during the call" in result.content


class _KeptEvents(EventStore):
    """Every event a server sent, kept for a client that resumes a stream."""

    def __init__(self) -> None:
        self.kept: list[tuple[str, str, types.JSONRPCMessage | None]] = []
        self.replays = 0

    async def store_event(self, stream_id: str, message: types.JSONRPCMessage | None) -> str:
        event_id = str(len(self.kept) + 1)
        self.kept.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send: EventCallback) -> str | None:
        self.replays += 1
        after = [i for i, (event_id, *_) in enumerate(self.kept) if event_id == last_event_id]
        if not after:
            return None
        stream_id = self.kept[after[0]][1]
        for event_id, stream, message in self.kept[after[0] + 1 :]:
            if stream == stream_id and message is not None:
                await send(EventMessage(message, event_id))
        return stream_id


async def test_a_calls_stream_cut_short_is_resumed_from_its_last_event():
    events, seen = _KeptEvents(), _Seen()
    progress: list[tuple[float, float | None, str | None]] = []
    async with _serving(seen, events=events) as url:
        transport = _transports()["http1"](url)
        async with asyncio.timeout(30), _session(transport) as session:
            result = await session.call_tool("cut", {}, progress_callback=_noting(progress))

    assert result.content[0] == types.TextContent(text="resumed")
    assert [message for *_, message in progress] == ["before the cut", "after the cut"]
    assert events.replays == 1
    resumed = [h for m, h in seen.requests if m == "GET" and "last-event-id" in h]
    assert len(resumed) == 1


_ACCEPTED = "server answered a request with 202 Accepted"
_REFUSAL = orjson.dumps(
    {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "bad arguments"}}
)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ((500, "text/plain", b"oops"), (types.INTERNAL_ERROR, "Server returned an error response")),
        ((400, "application/json", _REFUSAL), (-32602, "bad arguments")),
        ((202, "text/plain", b""), (types.INVALID_REQUEST, _ACCEPTED)),
        ((200, "text/html", b"<p>"), (types.INVALID_REQUEST, "Unexpected content type: text/html")),
    ],
    ids=["500", "400-json-rpc-error", "202", "html"],
)
async def test_a_request_answered_wrongly_fails_as_with_the_sdks_client(
    answer: tuple[int, str, bytes], expected: tuple[int, str]
):
    seen = _Seen()
    got: dict[str, tuple[int, str]] = {}
    async with _serving(seen) as url:
        for name, transport in _transports().items():
            async with asyncio.timeout(30), _session(transport(url)) as session:
                seen.answer = answer
                with pytest.raises(MCPError) as caught:
                    await session.call_tool("echo", {"text": "x"})
                seen.answer = None
                assert (await session.call_tool("echo", {"text": "y"})).content[0].text == "y"
            got[name] = (caught.value.code, caught.value.message)

    assert got == {"http1": expected, "sdk": expected}


async def test_a_wrong_path_fails_the_handshake_as_with_the_sdks_client():
    seen = _Seen()
    got: dict[str, tuple[int, str]] = {}
    async with _serving(seen) as url:
        for name, transport in _transports().items():
            with pytest.raises(BaseExceptionGroup) as caught:
                async with asyncio.timeout(30), _session(transport(url + "-nowhere")):
                    pass
            error = _first(caught.value)
            assert isinstance(error, MCPError)
            got[name] = (error.code, error.message)

    not_found = (types.METHOD_NOT_FOUND, "Not Found")
    assert got == {"http1": not_found, "sdk": not_found}


async def test_a_server_that_never_answers_fails_the_start_within_its_connect_timeout():
    """A server that takes the connection and says nothing: `connect_timeout_s` bounds the
    handshake, and the source says so."""
    held: list[asyncio.StreamWriter] = []

    async def silent(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        url = f"http://127.0.0.1:{port}/mcp"
        opened = _source(url, mcp={"connect_timeout_s": 0.5}, optional=True)
        async with asyncio.timeout(30), opened as (source, _):
            status = source.status()
        for writer in held:
            writer.close()

    assert not status.reachable and held
    assert "no answer within 0.5s" in (status.error or "")


async def test_a_proxy_from_the_environment_is_used(monkeypatch: pytest.MonkeyPatch):
    """`HTTP_PROXY` is honoured: `http1` knows no proxies, so a source whose URL the
    environment proxies keeps the SDK's httpx client, which sends through it."""
    seen: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append((await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")[0])
        writer.write(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(proxy, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with server:
        opened = _source("http://mcp.example/mcp", mcp={"connect_timeout_s": 5}, optional=True)
        async with asyncio.timeout(30), opened as (source, _):
            status = source.status()

    assert not status.reachable
    assert seen and set(seen) == {b"POST http://mcp.example/mcp HTTP/1.1"}


def test_only_a_url_the_environment_proxies_is_proxied(monkeypatch: pytest.MonkeyPatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        for spelling in (name, name.lower()):
            monkeypatch.delenv(spelling, raising=False)
    assert not proxied("http://mcp.example/mcp")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.test:3128")
    monkeypatch.setenv("NO_PROXY", "inside.test")
    assert proxied("https://mcp.example/mcp")
    assert not proxied("http://mcp.example/mcp")
    assert not proxied("https://inside.test/mcp")
