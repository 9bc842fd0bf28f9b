"""Long tool calls run as MCP tasks on `/mcp`, on two replicas sharing a real redis-server:
a task outlives the session that started it and is polled to its end on the other
replica, a cancel made on one replica stops the call running on the other, a task is its
key's alone, and its record goes when its TTL ends. Both dialects: 2025-11-25 (`task` on
`tools/call`, `tasks/result`) through the `mcp` SDK's client, and the 2026-07-28 tasks
extension over plain HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import mcp_types as types
import orjson
import pytest
import pytest_asyncio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from proxy.state.mcp_tasks import McpTaskRecord, RedisMcpTaskStore
from proxy.state.redis import RedisState
from proxy.state.redis import connect as connect_redis
from registry import ToolRegistry
from tests.conftest import Proxy, serve_proxy
from tests.proxy.state.conftest import _REDIS, RedisServer

pytestmark = pytest.mark.asyncio(loop_scope="module")

KEY_A = "key-a-000001"
KEY_B = "key-b-000001"
AUTH = {"keys": [{"name": "a", "key": KEY_A}, {"name": "b", "key": KEY_B}]}
POLICY = {"rules": [{"match": {"name": "w.forbidden"}, "action": "deny", "reason": "no"}]}
EXTENSION = "io.modelcontextprotocol/tasks"


class Jobs:
    """The slow tool's runs: each job waits until the test releases it."""

    def __init__(self) -> None:
        self.started: dict[str, asyncio.Event] = {}
        self.release: dict[str, asyncio.Event] = {}
        self.cancelled: list[str] = []
        self.finished: list[str] = []
        self._stopped: dict[str, asyncio.Event] = {}

    def stopped(self, name: str) -> asyncio.Event:
        """Set when the job's run is cancelled."""
        return self._stopped.setdefault(name, asyncio.Event())

    def job(self, name: str) -> tuple[asyncio.Event, asyncio.Event]:
        started = self.started.setdefault(name, asyncio.Event())
        return started, self.release.setdefault(name, asyncio.Event())


def jobs_registry(jobs: Jobs) -> ToolRegistry:
    registry = ToolRegistry()

    async def crunch(job: str) -> str:
        """Crunch numbers for a long time.

        Args:
            job: the job's name.
        """
        started, release = jobs.job(job)
        started.set()
        try:
            await asyncio.wait_for(release.wait(), 30)
        except asyncio.CancelledError:
            jobs.cancelled.append(job)
            jobs.stopped(job).set()
            raise
        jobs.finished.append(job)
        return f"crunched {job}"

    def quick(x: int) -> int:
        """Answer at once.

        Args:
            x: a number.
        """
        return x + 1

    def forbidden(x: int) -> int:
        """Never runs.

        Args:
            x: a number.
        """
        return x

    registry.register(crunch, namespace="w", tags=["slow"])
    registry.register(quick, namespace="w")
    registry.register(forbidden, namespace="w", tags=["slow"])
    return registry


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    if _REDIS is None:
        pytest.skip("redis-server is not installed")
    with tempfile.TemporaryDirectory(prefix="toolwire-redis-") as folder:
        server = RedisServer(folder)
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="module")
def jobs() -> Jobs:
    return Jobs()


@pytest.fixture(scope="module")
def prefix() -> str:
    return f"t-{uuid.uuid4().hex[:8]}:"


def replica_config(redis: RedisServer | None, prefix: str) -> dict[str, Any]:
    config = {"upstreams": [{"name": "demo", "base_url": "demo"}], "auth": AUTH, "policy": POLICY}
    if redis is not None:
        config["state"] = {"backend": "redis", "url": redis.url, "prefix": prefix}
    return config


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def replicas(
    redis: RedisServer, jobs: Jobs, prefix: str
) -> AsyncIterator[tuple[Proxy, Proxy]]:
    config = replica_config(redis, prefix)
    async with (
        serve_proxy(config, jobs_registry(jobs)) as a,
        serve_proxy(config, jobs_registry(jobs)) as b,
    ):
        yield a, b


def mcp_url(proxy: Proxy) -> str:
    return f"{proxy.base_url.removesuffix('/v1')}/mcp"


@contextlib.asynccontextmanager
async def connect(
    proxy: Proxy, key: str, elicitation: Any | None = None
) -> AsyncIterator[ClientSession]:
    """A 2025-11-25 session (the SDK's handshake client)."""
    headers = {"authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        streamable_http_client(mcp_url(proxy), http_client=http) as (read, write),
        ClientSession(read, write, elicitation_callback=elicitation) as session,
    ):
        initialized = await session.initialize()
        assert initialized.capabilities.tasks is not None
        yield session


async def call_as_task(
    session: ClientSession, name: str, arguments: dict[str, Any], task: dict[str, Any]
) -> dict[str, Any]:
    """A task-augmented `tools/call`'s raw result. The SDK's client checks a `tools/call`
    result against `CallToolResult` (it has no 2025-11-25 task support), so the request
    goes out below that check."""
    params = {"name": name, "arguments": arguments, "task": task}
    return await session._dispatcher.send_raw_request("tools/call", params, {})


async def start_task(
    session: ClientSession, name: str, arguments: dict[str, Any], ttl: int = 60_000
) -> types.Task:
    created = await call_as_task(session, name, arguments, {"ttl": ttl})
    return types.CreateTaskResult.model_validate(created, by_name=False).task


async def get_task(session: ClientSession, task_id: str) -> types.GetTaskResult:
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await session.send_request(request, types.GetTaskResult)


async def task_result(session: ClientSession, task_id: str) -> types.CallToolResult:
    request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
    return await session.send_request(request, types.CallToolResult)


async def cancel_task(session: ClientSession, task_id: str) -> types.CancelTaskResult:
    request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
    return await session.send_request(request, types.CancelTaskResult)


async def list_tasks(session: ClientSession) -> list[types.Task]:
    listed = await session.send_request(types.ListTasksRequest(), types.ListTasksResult)
    return listed.tasks


def text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_slow_tools_say_they_run_as_tasks(replicas: tuple[Proxy, Proxy]) -> None:
    a, _ = replicas
    async with connect(a, KEY_A) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    crunch, quick = tools["w_crunch"], tools["w_quick"]
    assert crunch.execution is not None and crunch.execution.task_support == "optional"
    assert quick.execution is None


async def test_a_task_outlives_its_session_and_ends_on_the_other_replica(
    replicas: tuple[Proxy, Proxy], jobs: Jobs
) -> None:
    a, b = replicas
    started, release = jobs.job("outlive")
    async with connect(a, KEY_A) as session:
        task = await start_task(session, "w_crunch", {"job": "outlive"})
    assert task.status == "working" and task.ttl == 60_000
    async with asyncio.timeout(10):
        await started.wait()
    async with connect(b, KEY_A) as session:
        polled = await get_task(session, task.task_id)
        assert polled.status == "working"
        assert task.task_id in {t.task_id for t in await list_tasks(session)}
        release.set()
        result = await task_result(session, task.task_id)
        done = await get_task(session, task.task_id)
    assert text(result) == "crunched outlive" and not result.is_error
    assert result.meta == {"io.modelcontextprotocol/related-task": {"taskId": task.task_id}}
    assert done.status == "completed"
    assert jobs.finished.count("outlive") == 1


async def test_a_cancel_on_one_replica_stops_the_call_on_the_other(
    replicas: tuple[Proxy, Proxy], jobs: Jobs
) -> None:
    a, b = replicas
    started, release = jobs.job("cancel-me")
    async with connect(a, KEY_A) as on_a:
        task = await start_task(on_a, "w_crunch", {"job": "cancel-me"})
        async with asyncio.timeout(10):
            await started.wait()
        async with connect(b, KEY_A) as on_b:
            cancelled = await cancel_task(on_b, task.task_id)
            with pytest.raises(MCPError, match="already ended"):
                await cancel_task(on_b, task.task_id)
        async with asyncio.timeout(10):
            await jobs.stopped("cancel-me").wait()
        polled = await get_task(on_a, task.task_id)
        with pytest.raises(MCPError, match="cancelled"):
            await task_result(on_a, task.task_id)
    release.set()
    assert cancelled.status == "cancelled" and polled.status == "cancelled"
    assert "cancel-me" not in jobs.finished


async def test_another_key_finds_no_task(replicas: tuple[Proxy, Proxy], jobs: Jobs) -> None:
    a, b = replicas
    _, release = jobs.job("mine")
    release.set()
    async with connect(a, KEY_A) as mine:
        task = await start_task(mine, "w_crunch", {"job": "mine"})
        async with connect(b, KEY_B) as theirs:
            for step in (get_task, task_result, cancel_task):
                with pytest.raises(MCPError, match="not found") as refused:
                    await step(theirs, task.task_id)
                assert refused.value.error.code == types.INVALID_PARAMS
            assert task.task_id not in {t.task_id for t in await list_tasks(theirs)}
        result = await task_result(mine, task.task_id)
    assert text(result) == "crunched mine"


async def test_a_task_is_gone_when_its_ttl_ends(replicas: tuple[Proxy, Proxy], jobs: Jobs) -> None:
    a, b = replicas
    _, release = jobs.job("brief")
    release.set()
    async with connect(a, KEY_A) as session:
        task = await start_task(session, "w_crunch", {"job": "brief"}, ttl=1000)
        assert task.ttl == 1000
        assert text(await task_result(session, task.task_id)) == "crunched brief"
    async with connect(b, KEY_A) as session, asyncio.timeout(10):
        while True:
            try:
                await get_task(session, task.task_id)
            except MCPError as gone:
                assert "not found" in str(gone)
                break
            await asyncio.sleep(0.1)


async def test_tools_that_do_not_run_as_tasks_and_refusals(replicas: tuple[Proxy, Proxy]) -> None:
    a, _ = replicas
    async with connect(a, KEY_A) as session:
        with pytest.raises(MCPError, match="does not run as a task") as refused:
            await start_task(session, "w_quick", {"x": 1})
        assert refused.value.error.code == types.METHOD_NOT_FOUND
        refusal = await call_as_task(session, "w_forbidden", {"x": 1}, {})
        denied = types.CallToolResult.model_validate(refusal, by_name=False)
        assert denied.is_error and "no" in text(denied) and "task" not in refusal
        with pytest.raises(MCPError, match="Unknown tool"):
            await start_task(session, "w_nothing", {})
        assert await list_tasks(session) is not None


async def test_a_task_running_when_its_server_stops_fails(
    replicas: tuple[Proxy, Proxy], jobs: Jobs, redis: RedisServer, prefix: str
) -> None:
    _, b = replicas
    started, _ = jobs.job("interrupted")
    async with serve_proxy(replica_config(redis, prefix), jobs_registry(jobs)) as c:
        async with connect(c, KEY_A) as session:
            task = await start_task(session, "w_crunch", {"job": "interrupted"})
        async with asyncio.timeout(10):
            await started.wait()
    assert jobs.stopped("interrupted").is_set()
    async with connect(b, KEY_A) as session:
        polled = await get_task(session, task.task_id)
        with pytest.raises(MCPError, match="the server stopped"):
            await task_result(session, task.task_id)
    assert polled.status == "failed" and "stopped" in (polled.status_message or "")


async def test_a_task_whose_replica_vanished_fails(
    replicas: tuple[Proxy, Proxy], redis: RedisServer, prefix: str
) -> None:
    _, b = replicas
    state = RedisState(await connect_redis(redis.url), prefix=prefix, max_entry_bytes=1 << 20)
    now = time.time()
    lost = McpTaskRecord(
        task_id="lost-task",
        owner="a",
        tool="w.crunch",
        status="working",
        created_at=now - 60,
        updated_at=now - 60,
        ttl_s=3600,
        lease_until=now - 30,
    )
    try:
        await RedisMcpTaskStore(state).create(lost)
    finally:
        await state.aclose()
    async with connect(b, KEY_A) as session:
        polled = await get_task(session, "lost-task")
    state = RedisState(await connect_redis(redis.url), prefix=prefix, max_entry_bytes=1 << 20)
    try:
        kept = await RedisMcpTaskStore(state).get("lost-task")
    finally:
        await state.aclose()
    assert polled.status == "failed"
    assert polled.status_message == "the replica running the call stopped"
    assert kept is not None and kept.status == "failed"


async def test_on_one_process_tasks_live_in_its_memory(jobs: Jobs) -> None:
    """The memory store; at most `max_running` at once, `max_running_per_key` for a key; an
    `ask` tool asks before its task exists, and runs as a task once approved."""
    first, release = jobs.job("alone")
    asked: list[str] = []

    async def approve(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    config = replica_config(None, "")
    config["mcp_server"] = {"tasks": {"max_running": 2, "max_running_per_key": 1}}
    config["policy"] = {"rules": [{"match": {"name": "w.crunch"}, "action": "ask"}]}
    async with (
        serve_proxy(config, jobs_registry(jobs)) as alone,
        connect(alone, KEY_A, elicitation=approve) as session,
    ):
        task = await start_task(session, "w_crunch", {"job": "alone"})
        assert len(asked) == 1 and "w.crunch" in asked[0]
        async with asyncio.timeout(10):
            await first.wait()
        with pytest.raises(MCPError, match="this key runs 1 tasks already"):
            await start_task(session, "w_crunch", {"job": "alone"})
        second, other_release = jobs.job("other key")
        async with connect(alone, KEY_B, elicitation=approve) as other:
            theirs = await start_task(other, "w_crunch", {"job": "other key"})
            async with asyncio.timeout(10):
                await second.wait()
            with pytest.raises(MCPError, match="2 tasks are running already"):
                await start_task(other, "w_crunch", {"job": "other key"})
            other_release.set()
            assert text(await task_result(other, theirs.task_id)) == "crunched other key"
        release.set()
        result = await task_result(session, task.task_id)
        listed = await list_tasks(session)
    assert text(result) == "crunched alone"
    assert [(t.task_id, t.status) for t in listed] == [(task.task_id, "completed")]
    assert len(asked) == 2  # the refused calls found no room before anyone was asked


# ---- 2026-07-28: the tasks extension, over plain HTTP ----


def envelope(extension: bool) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"extensions": {EXTENSION: {}}} if extension else {}
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
    }


async def rpc(
    http: httpx2.AsyncClient,
    proxy: Proxy,
    key: str,
    method: str,
    params: dict[str, Any],
    *,
    extension: bool = True,
    name: str | None = None,
) -> dict[str, Any]:
    """One 2026-07-28 request; its JSON-RPC response (the last one on an SSE stream)."""
    headers = {
        "authorization": f"Bearer {key}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = name
    body = {"jsonrpc": "2.0", "id": 1, "method": method}
    body["params"] = {**params, "_meta": envelope(extension)}
    response = await http.post(mcp_url(proxy), json=body, headers=headers)
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        lines = [ln for ln in response.text.splitlines() if ln.startswith("data:")]
        return orjson.loads(lines[-1].removeprefix("data:"))
    return orjson.loads(response.content)


async def test_a_2026_client_gets_a_task_handle_and_polls_the_result_inline(
    replicas: tuple[Proxy, Proxy], jobs: Jobs
) -> None:
    a, b = replicas
    started, release = jobs.job("modern")
    call = {"name": "w_crunch", "arguments": {"job": "modern"}}
    async with httpx2.AsyncClient(timeout=30) as http:
        created = (await rpc(http, a, KEY_A, "tools/call", call, name="w_crunch"))["result"]
        assert created["resultType"] == "task" and created["status"] == "working"
        assert created["ttlMs"] == 3_600_000 and created["pollIntervalMs"] > 0
        assert created["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "toolwire"
        task_id = created["taskId"]
        async with asyncio.timeout(10):
            await started.wait()
        ask = {"taskId": task_id}
        working = (await rpc(http, b, KEY_A, "tasks/get", ask, name=task_id))["result"]
        theirs = await rpc(http, b, KEY_B, "tasks/get", ask, name=task_id)
        undeclared = await rpc(http, b, KEY_A, "tasks/get", ask, name=task_id, extension=False)
        no_result = await rpc(http, b, KEY_A, "tasks/result", ask, name=task_id)
        release.set()
        async with asyncio.timeout(10):
            while True:
                done = (await rpc(http, b, KEY_A, "tasks/get", ask, name=task_id))["result"]
                if done["status"] != "working":
                    break
                await asyncio.sleep(0.05)
        acked = await rpc(http, a, KEY_A, "tasks/cancel", ask, name=task_id)
        plain = await rpc(http, a, KEY_A, "tools/call", call | {"arguments": {"job": "modern"}},
                          name="w_crunch", extension=False)  # fmt: skip
    assert working["status"] == "working" and working["resultType"] == "complete"
    assert theirs["error"]["code"] == types.INVALID_PARAMS
    assert undeclared["error"]["code"] == -32021
    assert no_result["error"]["code"] == types.METHOD_NOT_FOUND
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "crunched modern"}]
    assert acked["result"]["resultType"] == "complete"
    assert plain["result"]["content"] == [{"type": "text", "text": "crunched modern"}]
