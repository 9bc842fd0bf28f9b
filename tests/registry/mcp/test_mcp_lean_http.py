"""`tools/call` on a 2025-era Streamable HTTP session (Toolwire's `http1` transport, no OAuth)
takes the lean path (`registry.mcp.lean_calls`): the same results and the same request headers
as the SDK's path, and progress, questions, cancellation and a dropped connection work as
they do there (real servers written with the SDK, served over loopback; the real executor)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from registry import Executor, ToolCall, ToolRegistry, ToolResult
from registry.mcp import McpSource, McpSourceConfig
from registry.mcp.config import McpServerConfig, SamplingConfig
from registry.mcp.elicitation import ClientRequests
from registry.mcp.lean_calls import LeanCalls
from registry.mcp.session import McpSession
from registry.progress import ToolProgress, reporting_to
from registry.propagation import trace_headers
from testing.asgi_serving import serve_app
from testing.asking_servers import serve_asking
from testing.call_servers import calls_server
from testing.waiting import until

from . import lean_cases
from .conftest import REPO
from .lean_cases import Taken

pytestmark = pytest.mark.asyncio(loop_scope="module")

TRACE = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
SENT = ("mcp-protocol-version", "mcp-session-id", "x-caller", "traceparent")
"""The request headers compared between the two paths (a session id's value differs)."""


class Wire:
    """The calls server behind a recorder of each `tools/call`'s request headers; a call of
    `die` has its connection dropped in the middle of its answer (it never reaches the
    server, which lives in the test's process)."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self.headers: list[dict[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        messages: list[Message] = []
        body = b""
        while not messages or messages[-1].get("more_body", False):
            messages.append(await receive())
            body += messages[-1].get("body", b"")
        if b'"tools/call"' in body:
            self.headers.append({k.decode(): v.decode() for k, v in scope["headers"]})
            if json.loads(body)["params"]["name"] == "die":
                head = [(b"content-type", b"text/event-stream")]
                await send({"type": "http.response.start", "status": 200, "headers": head})
                await send({"type": "http.response.body", "body": b": ", "more_body": True})
                raise ConnectionAbortedError("dropped mid-answer")

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self._app(scope, replay, send)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def wire() -> AsyncIterator[tuple[Wire, str]]:
    app = Wire(calls_server().streamable_http_app())
    async with serve_app(app, timeout_graceful_shutdown=1) as root:
        yield app, root + "/mcp"


def _server(url: str) -> dict[str, Any]:
    return {"url": url, "headers": {"x-caller": "team-a"}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def paths(wire: tuple[Wire, str]) -> AsyncIterator[dict[str, McpSession]]:
    """The calls server twice: `lean` as configured, `sdk` with the lean path refused."""
    url = wire[1]
    sessions: dict[str, McpSession] = {}
    for path in ("lean", "sdk"):
        with pytest.MonkeyPatch.context() as patch:
            if path == "sdk":
                patch.setattr(LeanCalls, "serves", staticmethod(lambda session: False))
            sessions[path] = McpSession(
                McpServerConfig.model_validate(_server(url)),
                label=f"{path}-http",
                base_dir=REPO,
                on_tools=lambda tools: None,
                requests=ClientRequests(path, SamplingConfig()),
            )
            await sessions[path].start()
    yield sessions
    for session in sessions.values():
        await session.aclose()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tools(wire: tuple[Wire, str]) -> AsyncIterator[Any]:
    """The calls server and the asking server as sources over HTTP, run by the executor."""
    registry = ToolRegistry()
    async with serve_asking() as asking:
        sources = [
            McpSource(
                McpSourceConfig.model_validate({"mcp": _server(wire[1]), "namespace": "calls"}),
                base_dir=REPO,
            ),
            McpSource(
                McpSourceConfig.model_validate(
                    {
                        "mcp": {"url": asking},
                        "namespace": "ask",
                        "sampling": {"enabled": True, "model": "small-model", "max_tokens": 64},
                    }
                ),
                base_dir=REPO,
            ),
        ]
        await asyncio.gather(*(source.start(registry) for source in sources))
        with Executor(default_timeout_s=20) as executor:

            async def call(name: str, **arguments: Any) -> ToolResult:
                tool = registry.get_tool(name)
                return await executor.execute(tool, ToolCall("c1", name, arguments))

            yield call
        for source in sources:
            await source.aclose()


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("text", {"words": "same either way"}),
        ("image", {}),
        ("measure", {"width": 3, "height": 4}),
        ("fail", {"reason": "out of paper"}),
    ],
)
async def test_the_lean_path_gives_the_sdk_paths_result_and_headers(
    paths: dict[str, McpSession],
    wire: tuple[Wire, str],
    taken: Taken,
    tool: str,
    arguments: dict[str, Any],
) -> None:
    results, sent = {}, {}
    token = trace_headers.set(lambda: TRACE)
    try:
        for path in ("lean", "sdk"):
            results[path] = await paths[path].call_tool(tool, arguments)
            sent[path] = wire[0].headers[-1]
    finally:
        trace_headers.reset(token)
    assert taken.count == 1  # the lean session's call only
    assert results["lean"] == results["sdk"]
    for path in ("lean", "sdk"):
        assert [name for name in SENT if name not in sent[path]] == [], (path, sent[path])
    assert sent["lean"]["mcp-session-id"] != sent["sdk"]["mcp-session-id"]
    del sent["lean"]["mcp-session-id"], sent["sdk"]["mcp-session-id"]
    del sent["lean"]["host"], sent["sdk"]["host"]
    del sent["lean"]["content-length"], sent["sdk"]["content-length"]
    assert sent["lean"] == sent["sdk"]
    assert sent["lean"]["traceparent"] == TRACE["traceparent"]


async def test_progress_reaches_the_listener_before_the_result(tools: Any, taken: Taken) -> None:
    seen: list[ToolProgress] = []
    with reporting_to(seen.append):
        result = await tools("calls.count", steps=3)
        at_result = list(seen)
    assert result.content == "counted 3" and not result.is_error
    assert taken.count == 1
    assert [(p.progress, p.total, p.message) for p in at_result] == [
        (1, 3, "step 1"),
        (2, 3, "step 2"),
        (3, 3, "step 3"),
    ]


async def test_a_question_during_the_call_reaches_the_asker(tools: Any, taken: Taken) -> None:
    await lean_cases.a_question_reaches_the_asker(tools, taken)


async def test_a_completion_request_during_the_call_reaches_the_sampler(
    tools: Any, taken: Taken
) -> None:
    await lean_cases.a_completion_request_reaches_the_sampler(tools, taken)


async def test_an_abandoned_call_is_cancelled_on_the_server(
    tools: Any, taken: Taken, tmp_path: Path
) -> None:
    await lean_cases.an_abandoned_call_is_cancelled_on_the_server(tools, taken, tmp_path)


async def test_a_connection_dropped_mid_call_is_a_tool_error_and_comes_back(
    tools: Any, taken: Taken
) -> None:
    result = await tools("calls.die")
    assert result.is_error
    assert "lost during the call" in result.content
    assert taken.count == 1

    async def answers() -> bool:
        return not (await tools("calls.text", words="back")).is_error

    await until(answers, deadline_s=20)
