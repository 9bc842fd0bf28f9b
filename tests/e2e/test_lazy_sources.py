"""An MCP server started on first use, through `toolwire serve`: listed once at boot when no
manifest is cached, its tools injected while it does not run, started once by concurrent
first calls, stopped when idle, started again, shown in the admin's sources, and stopped
with the proxy."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
from openai import AsyncOpenAI

from testing.lazy_server import command, running
from testing.mcp_servers import process_state
from testing.upstream import FakeUpstream, Reply
from testing.waiting import until
from tests.conftest import REPO
from tests.e2e.served import descendants, log_lines, toolwire_serve

ADMIN = {"Authorization": "Bearer admin-key"}


def model(body: dict[str, Any]) -> Reply:
    """Calls the tool the user names (`lazy_pid`), then answers with its result."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply.text(f"result {last['content']}")
    return Reply.tool_calls([(last["content"], {})])


def lazy_servers(proxy: subprocess.Popen[bytes]) -> set[int]:
    """The proxy's descendants running the lazy test server (zombies left out)."""
    return running(descendants(proxy.pid))


async def lazy_source(http: aiohttp.ClientSession, base: str) -> dict[str, Any]:
    async with http.get(f"{base}/admin/api/sources", headers=ADMIN) as response:
        assert response.status == 200
        sources = await response.json()
    (found,) = [source for source in sources if source["name"] == "mcp:lazy"]
    return found


async def test_a_lazy_server_is_started_by_its_first_call_and_stopped_when_idle(
    tmp_path: Path,
) -> None:
    entry = {
        "mcp": {"command": command(), "env": {"PYTHONPATH": str(REPO)}},
        "namespace": "lazy",
        "lazy": True,
        "idle_s": 1.0,
    }
    async with (
        FakeUpstream(Reply.func(model)) as upstream,
        toolwire_serve(
            tmp_path, upstream, tools=[entry], admin={"enabled": True, "key": "admin-key"}
        ) as (base, proxy),
        aiohttp.ClientSession() as http,
        AsyncOpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0) as client,
    ):
        # No manifest was cached: the server was listed once at boot, and stopped.
        manifests = list((tmp_path / ".toolwire" / "manifests").iterdir())
        assert len(manifests) == 1 and b'"greet"' in manifests[0].read_bytes()
        messages = [line.get("message", "") for line in log_lines(tmp_path)]
        assert any("mcp:lazy: listed 3 tools, and stopped until used" in m for m in messages)
        assert not lazy_servers(proxy)
        source = await lazy_source(http, base)
        assert source["lazy"] == "stopped" and source["tools"] == 3 and source["reachable"]
        assert source["first_use_ms"] is None

        # Injected while the server does not run.
        upstream.script(Reply.text("nothing to do"))
        await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        offered = {tool["function"]["name"] for tool in upstream.requests[-1]["tools"]}
        assert {"lazy_pid", "lazy_greet", "lazy_hold"} <= offered
        assert not lazy_servers(proxy)

        async def ask_pid() -> str:
            answer = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "lazy_pid"}]
            )
            text = answer.choices[0].message.content or ""
            assert text.startswith("result "), text
            return text.removeprefix("result ")

        # Concurrent first calls start the server once.
        pids = set(await asyncio.gather(*(ask_pid() for _ in range(4))))
        assert len(pids) == 1, pids
        first = int(pids.pop())
        assert lazy_servers(proxy) == {first}
        source = await lazy_source(http, base)
        assert source["lazy"] == "running" and source["first_use_ms"] > 0

        # Idle for `idle_s`: stopped; the next call starts it again.
        stopped: dict[str, Any] = {}

        async def is_stopped() -> bool:
            stopped.update(await lazy_source(http, base))
            return stopped["lazy"] == "stopped"

        async with asyncio.timeout(20):
            while not await is_stopped():  # noqa: ASYNC110 (the admin API, polled)
                await asyncio.sleep(0.05)
        await until(lambda: process_state(first) in (None, "Z"), deadline_s=20)
        second = int(await ask_pid())
        assert second != first and lazy_servers(proxy) == {second}

        # The proxy's shutdown stops the server it started.
        proxy.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proxy.wait, 30)
        assert process_state(second) in (None, "Z")
