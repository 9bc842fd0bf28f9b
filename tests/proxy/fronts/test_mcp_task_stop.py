"""An `/mcp` task that the server's stop ends while the shared state is failing leaves no
trace in the process: its slot (and its key's) is given back and its end is signalled, also
when the store's error comes back as the stop's cancellation (`proxy/state/cancels.py`)."""

from __future__ import annotations

import asyncio
import contextlib
from types import SimpleNamespace
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError

from proxy.config.edge import McpTasksConfig
from proxy.fronts.mcp.tasks import McpTasks
from proxy.state.mcp_tasks import McpTaskRecord, MemoryMcpTaskStore
from proxy.state.redis import reaching


class LostStore(MemoryMcpTaskStore):
    """Redis lost once the call runs: settling fails as `reaching` maps it."""

    async def settle(self, record: McpTaskRecord) -> McpTaskRecord | None:
        with reaching("keeping an MCP task's outcome"):
            raise RedisConnectionError("Connection closed by server.")


class Hanging:
    """The tools: every call runs until it is cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def run(self, admitted: Any) -> Any:
        self.started.set()
        await asyncio.Event().wait()


async def test_a_task_stopped_while_the_state_fails_gives_its_slot_back() -> None:
    tools = Hanging()
    tasks = McpTasks(LostStore(), McpTasksConfig(), tools)  # type: ignore[arg-type]
    admitted = SimpleNamespace(tool=SimpleNamespace(qualified_name="s.slow"))

    async def serve() -> None:
        async with tasks.running():
            await tasks.start(admitted, "key-a", None)  # type: ignore[arg-type]
            await tools.started.wait()

    serving = asyncio.create_task(serve())
    await asyncio.wait({serving}, timeout=60)  # a deadline that must not fire
    assert serving.done()
    with contextlib.suppress(asyncio.CancelledError):
        serving.result()
    assert tasks._running == {} and tasks._per_key == {}
