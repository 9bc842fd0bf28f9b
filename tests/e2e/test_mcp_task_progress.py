"""MCP tools run as tasks, their progress streamed, through the real server: a test MCP server
(`testing.mcp_tasks`) over Streamable HTTP, the official openai and anthropic SDKs as
clients. Progress reaches each front's stream, the task's result reaches the model, a
client that goes away cancels the task on the server, a failing task is an error result,
and a server without tasks works as before; and Toolwire's client against Toolwire's own
`/mcp` tasks. (Over stdio: tests/registry/mcp/test_mcp_tasks.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from anthropic import AsyncAnthropic

from registry import ToolRegistry
from testing.mcp_servers import serve_http
from testing.mcp_tasks import TaskBoard, serve_tasks_http
from testing.upstream import FakeUpstream, Reply
from tests.conftest import Proxy, serve_proxy
from tests.e2e.responses_client import items, respond

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = "fake-model"
EVENTS = {"toolwire": {"stream_tool_events": True}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as fake:
        yield fake


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def board() -> TaskBoard:
    return TaskBoard()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def proxy(upstream: FakeUpstream, board: TaskBoard) -> AsyncIterator[Proxy]:
    async with serve_tasks_http(board) as tasks_url, serve_http("demo", "streamable-http") as demo:
        config = {
            "upstreams": [{"name": "fake", "base_url": upstream.base_url, "models": ["*"]}],
            "tools": [
                {"mcp": {"url": tasks_url}, "namespace": "http"},
                {"mcp": {"url": demo}, "namespace": "demo"},
            ],
        }
        async with serve_proxy(config) as served:
            yield served


def _crunch(namespace: str, steps: int, **arguments: Any) -> Reply:
    return Reply.tool_calls([(f"{namespace}_crunch", {"steps": steps, "delay": 0.01, **arguments})])


def _last_tool_message(upstream: FakeUpstream) -> str:
    messages = upstream.requests[-1]["messages"]
    return next(m["content"] for m in reversed(messages) if m["role"] == "tool")


async def test_chat_streams_progress_and_the_task_result_reaches_the_model(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    namespace = "http"
    upstream.script(_crunch(namespace, 3), Reply.text("all crunched"))
    stream = await proxy.client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "crunch"}],
        stream=True,
        extra_body=EVENTS,
    )
    reports, text = [], []
    async for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text.append(delta.content or "")
        vendor = (delta.model_extra or {}).get("toolwire") or {}
        if "progress" in vendor:
            reports.append(vendor["progress"])
    counted = [r for r in reports if "progress" in r]
    assert [(r["progress"], r["total"], r["message"]) for r in counted] == [
        (1, 3, "step 1 of 3"),
        (2, 3, "step 2 of 3"),
        (3, 3, "step 3 of 3"),
    ]
    assert {r["tool"] for r in reports} == {f"{namespace}_crunch"}
    assert {"status": "completed"}.items() <= reports[-1].items()
    assert _last_tool_message(upstream) == "crunched 3 steps"
    assert "".join(text) == "all crunched"


async def test_chat_without_tool_events_shows_no_progress(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    upstream.script(_crunch("http", 2), Reply.text("done"))
    stream = await proxy.client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "crunch"}], stream=True
    )
    extras = [c.choices[0].delta.model_extra async for c in stream if c.choices]
    assert not any("toolwire" in (extra or {}) for extra in extras)
    assert _last_tool_message(upstream) == "crunched 2 steps"


async def test_responses_stream_progress_on_the_mcp_call_item(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    upstream.script(_crunch("http", 2), Reply.text("crunched"))
    events = []
    stream = await proxy.client.responses.create(
        model=MODEL, input="crunch", stream=True, extra_body=EVENTS
    )
    async for event in stream:
        events.append(event)
    added = [e for e in events if e.type == "response.output_item.added"]
    (call,) = [e.item for e in added if e.item.type == "mcp_call"]
    # Toolwire's own event: the SDK reads it as another type, its fields kept as sent.
    progress = [e.to_dict() for e in events if e.type == "toolwire.progress"]
    assert {(e["item_id"], e["output_index"]) for e in progress} == {(call.id, 0)}
    counted = [e["progress"] for e in progress if "progress" in e["progress"]]
    assert [(p["progress"], p["total"], p["tool"]) for p in counted] == [
        (1, 2, "http_crunch"),
        (2, 2, "http_crunch"),
    ]
    final = events[-1].response
    (done,) = items(final, "mcp_call")
    assert done.output == "crunched 2 steps"
    # The SDK's stream helper (which builds the response as events come) takes it too.
    upstream.script(_crunch("http", 2), Reply.text("crunched"))
    streamed = await respond(
        proxy.client, stream=True, model=MODEL, input="crunch", extra_body=EVENTS
    )
    assert items(streamed, "mcp_call")[0].output == "crunched 2 steps"


async def test_messages_stream_progress_as_toolwire_events(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    root = proxy.base_url.removesuffix("/v1")
    request: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "crunch"}],
    }
    async with AsyncAnthropic(base_url=root, api_key="-", max_retries=0, timeout=30) as client:
        upstream.script(_crunch("http", 2), Reply.text("crunched it"))
        stream = await client.messages.create(**request, stream=True)
        kinds, reports = [], []
        async for event in stream:
            kinds.append(event.type)
            if event.type == "toolwire_progress":
                # Toolwire's own event: the SDK reads it as another type, its fields kept.
                reports.append(event.to_dict()["progress"])
        assert [(r["progress"], r["total"]) for r in reports if "progress" in r] == [
            (1, 2),
            (2, 2),
        ]
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
        # The SDK's stream helper folds the message as before, the progress events aside.
        upstream.script(_crunch("http", 2), Reply.text("crunched it"))
        async with client.messages.stream(**request) as helper:
            message = await helper.get_final_message()
        assert [b.text for b in message.content if b.type == "text"] == ["crunched it"]


async def test_a_client_that_goes_away_cancels_the_task_on_the_server(
    proxy: Proxy, upstream: FakeUpstream, board: TaskBoard
) -> None:
    board.cancelled = asyncio.Event()
    upstream.script(_crunch("http", 10_000))  # the turn never asks again
    stream = await proxy.client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "crunch"}],
        stream=True,
        extra_body=EVENTS,
    )
    async for chunk in stream:
        vendor = (chunk.choices[0].delta.model_extra or {}) if chunk.choices else {}
        if "progress" in vendor.get("toolwire", {}):
            break  # the task runs: go away
    await stream.close()
    async with asyncio.timeout(10):
        await board.cancelled.wait()
    (cancelled,) = [t for t in board.tasks.values() if t.status == "cancelled"]
    assert cancelled.message == "cancelled by the client"


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("crunch_fails", {"reason": "the abacus broke"}, "the task failed: the abacus broke"),
        ("crunch_tool_error", {}, "the numbers did not add up"),
    ],
    ids=["failed-task", "tool-error"],
)
async def test_a_task_that_fails_is_an_error_result(
    proxy: Proxy, upstream: FakeUpstream, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    upstream.script(Reply.tool_calls([(f"http_{tool}", arguments)]), Reply.text("sorry"))
    answer = await proxy.client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "crunch"}]
    )
    assert answer.choices[0].message.content == "sorry"
    content = _last_tool_message(upstream)
    assert content.startswith("Error") and expected in content


async def test_tools_without_task_support_answer_as_before(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    upstream.script(
        Reply.tool_calls([("demo_echo", {"text": "hello"}), ("http_plain", {"text": "x"})]),
        Reply.text("ok"),
    )
    stream = await proxy.client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "echo"}], stream=True, extra_body=EVENTS
    )
    async for _ in stream:
        pass
    messages = upstream.requests[-1]["messages"]
    assert [m["content"] for m in messages if m["role"] == "tool"] == ["hello", "plain x"]


async def test_toolwire_runs_another_toolwires_long_tools_as_tasks(
    upstream: FakeUpstream,
) -> None:
    """Toolwire's client against Toolwire's own `/mcp`, in both dialects (2025-11-25 tasks,
    the 2026-07-28 tasks extension): tools tagged `slow` there run as tasks here, a failure
    there is an error result here, and a client that goes away here cancels the task there."""
    started: dict[str, asyncio.Event] = {}
    cancelled: dict[str, asyncio.Event] = {}
    served = ToolRegistry()

    async def brew(cups: int) -> str:
        """Brew coffee.

        Args:
            cups: how many.
        """
        if cups < 1:
            raise ValueError("no cups, no coffee")
        return f"{cups} cups brewed"

    async def distil(batch: str) -> str:
        """Distil a batch, for hours.

        Args:
            batch: which one.
        """
        started[batch].set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled[batch].set()
            raise
        return "distilled"

    served.register(brew, namespace="t", tags=["slow"])
    served.register(distil, namespace="t", tags=["slow"])
    fake = {"name": "fake", "base_url": upstream.base_url, "models": ["*"]}
    async with serve_proxy({"upstreams": [fake]}, served) as far:
        url = far.base_url.removesuffix("/v1") + "/mcp"
        tools = [
            {"mcp": {"url": url}, "namespace": "old"},
            {"mcp": {"url": url, "protocol": "2026-07-28"}, "namespace": "new"},
        ]
        async with serve_proxy({"upstreams": [fake], "tools": tools}) as near:
            for side in ("old", "new"):
                upstream.script(
                    Reply.tool_calls([(f"{side}_t_brew", {"cups": 2})]), Reply.text("ok")
                )
                brewing = await near.client.chat.completions.create(
                    model=MODEL,
                    messages=[{"role": "user", "content": "brew"}],
                    stream=True,
                    extra_body=EVENTS,
                )
                statuses = [
                    vendor["progress"].get("status")
                    async for chunk in brewing
                    if chunk.choices
                    and "progress"
                    in (vendor := (chunk.choices[0].delta.model_extra or {}).get("toolwire", {}))
                ]
                assert "completed" in statuses  # it ran as a task, followed to its end
                assert _last_tool_message(upstream) == "2 cups brewed"
                upstream.script(
                    Reply.tool_calls([(f"{side}_t_brew", {"cups": 0})]), Reply.text("ok")
                )
                await near.client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": "brew"}]
                )
                failed = _last_tool_message(upstream)
                assert failed.startswith("Error") and "no cups, no coffee" in failed
                started[side], cancelled[side] = asyncio.Event(), asyncio.Event()
                upstream.script(Reply.tool_calls([(f"{side}_t_distil", {"batch": side})]))
                stream = await near.client.chat.completions.create(
                    model=MODEL,
                    messages=[{"role": "user", "content": "distil"}],
                    stream=True,
                    extra_body=EVENTS,
                )
                async with asyncio.timeout(10):
                    await started[side].wait()
                await stream.close()
                async with asyncio.timeout(10):
                    await cancelled[side].wait()  # the far side's call, cancelled with its task
